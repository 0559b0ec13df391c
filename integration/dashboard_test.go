package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
)

// chromium finds Debian's chromium, which the test command installs.
func chromium(t *testing.T) string {
	t.Helper()
	testlane.FullOnly(t, "Chromium (apt)")
	for _, name := range []string{os.Getenv("MODELGATE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("dashboard browser test skipped: no chromium (scripts/test.sh installs Debian's)")
	return ""
}

// browser starts headless Chromium and collects console errors and
// warnings, uncaught exceptions, and the errors the browser itself logs
// (a request answered 4xx or 5xx, a resource that failed to load) of
// every page.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser exits, which would fail the
	// test's cleanup; the cleanup waits for them instead, then removes it.
	profile, err := os.MkdirTemp("", "modelgate-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	// Newer Chromium sends events this protocol version cannot decode
	// (harmless); they go to the test log, not the terminal.
	ctx, cancelB := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelC := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelC()
		cancelB()
		cancelA()
		// Removing the profile while a helper process (crashpad, a
		// utility process) still runs lets it recreate Default/ in the
		// system temp directory: wait, bounded, until no process names the
		// profile, then remove it.
		deadline := time.Now().Add(15 * time.Second)
		for len(processesUsing(profile)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := os.RemoveAll(profile); err != nil {
			t.Errorf("Chromium's profile %s: %v", profile, err)
		}
		if left := processesUsing(profile); len(left) > 0 {
			t.Errorf("Chromium processes %v still use %s after the test", left, profile)
		}
	})
	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				problems = append(problems, string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			// What DevTools' console shows in red without a script asking:
			// "Failed to load resource: … 401" for a fetch answered 401.
			if e.Entry.Level == cdplog.LevelError {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// processesUsing lists the processes whose command line names dir.
func processesUsing(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// unlabelledControls lists the visible form controls that have neither a
// label, an aria-label nor text of their own.
const unlabelledControls = `[...document.querySelectorAll('input, select, textarea, button')]
  .filter((e) => e.offsetParent !== null && !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
  .map((e) => e.id || e.outerHTML.slice(0, 80))`

// TestDashboardInBrowser signs in to /ui/ as the admin and as a user in
// real headless Chromium, reads the figures the page drew and compares
// them with the report API, creates a key through the page, uses it,
// revokes it, and checks the page raised no console error.
func TestDashboardInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	u := startUpstreams(t, fakes.Options{})
	// 30 requests at 1.1 cents: figures a page could get wrong.
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	for i := 0; i < 30; i++ {
		if status, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`, "X-Claude-Code-Session-Id", "dash-session"); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	}
	// A free local model: $0, so only its requests' tokens show it.
	for i := 0; i < 3; i++ {
		if status, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hello there, echo"}]}`); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	}
	time.Sleep(500 * time.Millisecond) // the ledger writer's flush

	// What the report API says this month cost, in cents.
	month := time.Now().UTC()
	since := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	_, _, ubody := g.do(t, "GET", "/v1/organizations/usage_report/messages?starting_at="+since+"&group_by[]=model&limit=31", adminKey, "")
	var usage struct {
		Data []struct {
			Results []struct {
				Model    string `json:"model"`
				Input    int64  `json:"uncached_input_tokens"`
				Output   int64  `json:"output_tokens"`
				Requests int64  `json:"requests"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ubody, &usage); err != nil {
		t.Fatal(err)
	}
	var echoIn, echoOut, echoRequests int64
	for _, d := range usage.Data {
		for _, r := range d.Results {
			if r.Model == "echo" {
				echoIn, echoOut, echoRequests = echoIn+r.Input, echoOut+r.Output, echoRequests+r.Requests
			}
		}
	}
	if echoIn == 0 || echoOut == 0 || echoRequests != 3 {
		t.Fatalf("the usage report has no echo tokens or not its 3 requests: %s", ubody)
	}
	_, _, body := g.do(t, "GET", "/v1/organizations/cost_report?starting_at="+since+"&limit=31", adminKey, "")
	var cost struct {
		Data []struct {
			Results []struct {
				Amount string `json:"amount"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &cost); err != nil {
		t.Fatal(err)
	}
	total := new(big.Rat)
	for _, d := range cost.Data {
		for _, r := range d.Results {
			v, _ := new(big.Rat).SetString(r.Amount)
			total.Add(total, v)
		}
	}
	want := "$" + new(big.Rat).Quo(total, big.NewRat(100, 1)).FloatString(2)

	signIn := func(key string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.Navigate(g.base + "/ui/"),
			chromedp.WaitVisible("#key", chromedp.ByID),
			// Enter submits: signing in needs no pointer.
			chromedp.SendKeys("#key", key+kb.Enter, chromedp.ByID),
			chromedp.WaitVisible("#total-spend", chromedp.ByID),
		}
	}
	// Each key's and session's cache-read share, as the reports give it.
	_, _, kbody := g.do(t, "GET", "/v1/organizations/usage_report/messages?starting_at="+since+"&group_by[]=api_key_id&limit=31", adminKey, "")
	var byKeyUsage struct {
		Data []struct {
			Results []struct {
				Key   string  `json:"api_key_id"`
				Share float64 `json:"cache_read_share"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(kbody, &byKeyUsage); err != nil {
		t.Fatal(err)
	}
	aliceShare := -1.0
	for _, d := range byKeyUsage.Data {
		for _, r := range d.Results {
			if r.Key == "alice" {
				aliceShare = r.Share
			}
		}
	}
	_, _, sbody := g.do(t, "GET", "/v1/organizations/sessions?starting_at="+since, adminKey, "")
	var sess struct {
		Data []struct {
			ID    string  `json:"id"`
			Share float64 `json:"cache_read_share"`
		} `json:"data"`
	}
	if err := json.Unmarshal(sbody, &sess); err != nil || len(sess.Data) == 0 {
		t.Fatalf("sessions: %v %s", err, sbody)
	}
	// The fake answers every oa request with the same cached part of its prompt.
	if want := ledger.CacheReadShare(fakes.OpenAIPromptTokens-fakes.OpenAICachedTokens, 0, fakes.OpenAICachedTokens); sess.Data[0].ID != "dash-session" || sess.Data[0].Share != want {
		t.Errorf("session cache_read_share %v, want %v: %s", sess.Data[0].Share, want, sbody)
	}
	if aliceShare <= 0 || aliceShare >= sess.Data[0].Share {
		t.Errorf("alice's cache_read_share %v: want above 0 and below her session's %v (echo's requests read no cache)", aliceShare, sess.Data[0].Share)
	}
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", math.Round(f*1000)/10) }

	var spend, topSessions, byModel, topKeys string
	if err := chromedp.Run(ctx, signIn(adminKey),
		chromedp.Text("#total-spend", &spend, chromedp.ByID),
		chromedp.Text("#view", &topSessions, chromedp.ByID),
		chromedp.Text("#by-model", &byModel, chromedp.ByID),
		chromedp.Text("#top-keys", &topKeys, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(topKeys, "alice\t") || !strings.Contains(topKeys, "\t"+pct(aliceShare)) {
		t.Errorf("top keys %q: want alice with her cache-read share %s", topKeys, pct(aliceShare))
	}
	if !strings.Contains(topSessions, "\t"+pct(sess.Data[0].Share)+"\t") {
		t.Errorf("top sessions %q: want dash-session's cache-read share %s", topSessions, pct(sess.Data[0].Share))
	}
	// The echo alias costs nothing and still has its row, with its 3
	// requests and its tokens.
	echoRow := fmt.Sprintf("echo\t3\t%s\t%s\t$0.00", thousands(echoIn), thousands(echoOut))
	// oa names the upstream model that answered it (newcomer review P6).
	if !strings.Contains(byModel, echoRow) || !strings.Contains(byModel, "oa → fake-gpt\t") {
		t.Errorf("models used: %q, want a row %q and one for oa → fake-gpt", byModel, echoRow)
	}
	if spend != want {
		t.Errorf("the page shows %s spent this month, the cost report %s", spend, want)
	}
	if !strings.Contains(topSessions, "dash-session") || !strings.Contains(topSessions, "claude-code") {
		t.Errorf("top sessions missing from the overview: %q", topSessions)
	}
	// Every view: each visible control has a name a screen reader can say.
	for _, v := range []struct{ hash, ready string }{{"overview", "#total-spend"}, {"keys", "#create-key"}, {"workspaces", "#create-workspace"},
		{"sessions", "#view table"}, {"deployments", "#view table"}, {"explorer", "#explore-out table"}, {"audit", "#view table"}} {
		var nameless []string
		if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#"+v.hash), chromedp.Reload(), chromedp.WaitVisible(v.ready, chromedp.ByQuery),
			chromedp.Evaluate(unlabelledControls, &nameless)); err != nil {
			t.Fatalf("%s: %v", v.hash, err)
		}
		if len(nameless) > 0 {
			t.Errorf("%s view: controls without a label: %q", v.hash, nameless)
		}
	}
	// The keyboard alone moves between views: Tab from Overview reaches Keys, Enter opens it.
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#overview"), chromedp.Reload(), chromedp.WaitVisible("#total-spend", chromedp.ByID),
		chromedp.Focus(`#nav a[data-view="overview"]`, chromedp.ByQuery), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible("#create-key", chromedp.ByID)); err != nil {
		t.Fatalf("keyboard navigation: %v", err)
	}
	// With MODELGATE_SCREENSHOTS=<dir>, every admin view is saved as a PNG
	// (docs/screenshots holds docs/dashboard.md's).
	if dir := os.Getenv("MODELGATE_SCREENSHOTS"); dir != "" {
		for _, v := range []struct{ hash, ready string }{{"overview", "#total-spend"}, {"keys", "#create-key"}, {"workspaces", "#create-workspace"},
			{"sessions", "#view table"}, {"deployments", "#view table"}, {"explorer", "#explore-out table"}, {"audit", "#view table"}} {
			var png []byte
			if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#"+v.hash), chromedp.Reload(), chromedp.WaitVisible(v.ready, chromedp.ByQuery),
				chromedp.FullScreenshot(&png, 100)); err != nil {
				t.Fatalf("screenshot of %s: %v", v.hash, err)
			}
			if err := os.WriteFile(dir+"/"+v.hash+".png", png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var png []byte
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(g.base+"/ui/#overview"),
			chromedp.Reload(), chromedp.WaitVisible("#total-spend", chromedp.ByID), chromedp.FullScreenshot(&png, 100),
			chromedp.EmulateViewport(1280, 900)); err != nil {
			t.Fatalf("phone screenshot: %v", err)
		}
		if err := os.WriteFile(dir+"/overview-phone.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Create a key through the page; its secret is shown once and works.
	var secret string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(g.base+"/ui/#keys"),
		chromedp.WaitVisible("#create-key", chromedp.ByID),
		chromedp.SendKeys("#k-name", "made-in-the-browser", chromedp.ByID),
		chromedp.SendKeys("#k-models", "echo", chromedp.ByID),
		chromedp.Click("#create-key button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#new-secret", chromedp.ByID),
		chromedp.Text("#new-secret", &secret, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "sk-mg-") || chatStatus(t, g, secret, "echo") != 200 {
		t.Fatalf("the page's key %q does not work", secret)
	}
	_, _, list := g.do(t, "GET", "/v1/organizations/api_keys?limit=1000", adminKey, "")
	var keys struct {
		Data []struct{ ID, Name string } `json:"data"`
	}
	_ = json.Unmarshal(list, &keys)
	var id string
	for _, k := range keys.Data {
		if k.Name == "made-in-the-browser" {
			id = k.ID
		}
	}
	// Edit its limits through the page.
	if err := chromedp.Run(ctx,
		chromedp.Click(`button[data-edit="`+id+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#edit-limits", chromedp.ByID),
		chromedp.SetValue("#e-budget", "5", chromedp.ByID),
		chromedp.Click("#edit-limits button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent("#edit-limits", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if _, _, k := g.do(t, "GET", "/v1/organizations/api_keys/"+id, adminKey, ""); !strings.Contains(string(k), `"budget":{"amount":"500","period":"monthly"}`) {
		t.Errorf("budget set in the page: %s", k)
	}
	// A workspace made in the page is listed by the API.
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#workspaces"), chromedp.Reload(),
		chromedp.WaitVisible("#create-workspace", chromedp.ByID),
		chromedp.SendKeys("#w-name", "browser-team", chromedp.ByID),
		chromedp.Click("#create-workspace button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(`button[data-archive]`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if _, _, ws := g.do(t, "GET", "/v1/organizations/workspaces", adminKey, ""); !strings.Contains(string(ws), "browser-team") {
		t.Errorf("workspace made in the page: %s", ws)
	}
	// Its rate limits are edited in the page too.
	if err := chromedp.Run(ctx, chromedp.Click(`button[data-edit^="wrkspc_"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#edit-limits", chromedp.ByID),
		chromedp.SetValue("#e-tpm", "9000", chromedp.ByID),
		chromedp.SetValue("#e-parallel", "3", chromedp.ByID),
		chromedp.Click("#edit-limits button[type=submit]", chromedp.ByQuery),
		chromedp.WaitNotPresent("#edit-limits", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if _, _, ws := g.do(t, "GET", "/v1/organizations/workspaces", adminKey, ""); !strings.Contains(string(ws), `"tpm":9000,"max_parallel":3`) {
		t.Errorf("workspace limits set in the page: %s", ws)
	}
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#keys"), chromedp.Reload(),
		chromedp.WaitVisible(`button[data-revoke="`+id+`"]`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(ctx, chromedp.Click(`button[data-revoke="`+id+`"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`button[data-revoke="`+id+`"]`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if got := chatStatus(t, g, secret, "echo"); got != 401 {
		t.Errorf("revoked in the page, the key still gets %d", got)
	}

	// Keys and workspaces go by their names, not their ids (the overview's
	// top keys, the keys list's workspace); a long per-person key name and
	// id still leave the action column in sight at 1280 px; the list shows
	// usable keys, and a status filter the others.
	_, _, wbody := g.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"platform-team"}`)
	var ws struct{ ID string }
	if err := json.Unmarshal(wbody, &ws); err != nil || ws.ID == "" {
		t.Fatalf("workspace: %v %s", err, wbody)
	}
	const longName = "oidc: a-rather-long-person-name@engineering.example-company.com"
	_, _, lbody := g.do(t, "POST", "/v1/organizations/api_keys", adminKey, `{"name":"`+longName+`","workspace_id":"`+ws.ID+`","models":["echo"]}`)
	var long struct{ ID, Value string }
	if err := json.Unmarshal(lbody, &long); err != nil || long.Value == "" {
		t.Fatalf("key: %v %s", err, lbody)
	}
	if got := chatStatus(t, g, long.Value, "echo"); got != 200 {
		t.Fatalf("the long-named key: %d", got)
	}
	var keysText, archivedText, overviewKeys string
	var actionsInSight bool
	inSight := `(() => { const b = document.querySelector('button[data-revoke="` + long.ID + `"]'); const s = b.closest('.scroll');
	  return b.getBoundingClientRect().right <= window.innerWidth && s.scrollWidth <= s.clientWidth; })()`
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#keys"), chromedp.Reload(),
		chromedp.WaitVisible(`button[data-revoke="`+long.ID+`"]`, chromedp.ByQuery),
		chromedp.Evaluate(inSight, &actionsInSight), chromedp.Text("#view", &keysText, chromedp.ByID),
		chromedp.SetValue("#k-filter", "archived", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('k-filter').dispatchEvent(new Event('change'))`, nil),
		chromedp.WaitNotPresent(`button[data-revoke="`+long.ID+`"]`, chromedp.ByQuery),
		chromedp.Text("#view", &archivedText, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if !actionsInSight {
		t.Errorf("at 1280 px the keys table scrolls sideways or hides %s's Revoke button", long.ID)
	}
	if !strings.Contains(keysText, "platform-team") || strings.Contains(keysText, ws.ID) || strings.Contains(keysText, "made-in-the-browser") {
		t.Errorf("keys list: want workspace platform-team by name, not %s, and the revoked key only under its filter: %q", ws.ID, keysText)
	}
	if !strings.Contains(archivedText, "made-in-the-browser") || strings.Contains(archivedText, longName) {
		t.Errorf("keys list filtered to archived: %q", archivedText)
	}
	// The long key's spend reaches the report once the ledger's writer has
	// flushed it: read the overview again until it shows (bounded).
	var overviewErr error
	testwait.Until(func() bool {
		overviewErr = chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#overview"), chromedp.Reload(), chromedp.WaitVisible("#top-keys", chromedp.ByID),
			chromedp.Text("#top-keys", &overviewKeys, chromedp.ByID))
		return overviewErr != nil || strings.Contains(overviewKeys, longName)
	})
	if overviewErr != nil {
		t.Fatal(overviewErr)
	}
	if !strings.Contains(overviewKeys, longName) || strings.Contains(overviewKeys, long.ID) {
		t.Errorf("top keys: want %q by name, not %s: %q", longName, long.ID, overviewKeys)
	}

	// The usage explorer: grouped by key, filtered to a model nobody used.
	var explored, filtered string
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#explorer"), chromedp.Reload(),
		chromedp.WaitVisible("#explore-out table", chromedp.ByQuery),
		chromedp.SetValue("#x-group", "api_key_id", chromedp.ByID),
		chromedp.Click("#explore button[type=submit]", chromedp.ByQuery),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Text("#explore-out", &explored, chromedp.ByID),
		chromedp.SetValue("#x-models", "llama", chromedp.ByID),
		chromedp.Click("#explore button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#explore-out .empty", chromedp.ByQuery),
		chromedp.Text("#explore-out", &filtered, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(explored, "alice") || !strings.Contains(filtered, "Nothing") {
		t.Errorf("explorer: grouped %q, filtered %q", explored, filtered)
	}

	// The audit log view lists the key just made, and never its secret.
	var auditText string
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#audit"), chromedp.Reload(), chromedp.WaitVisible("#view table", chromedp.ByQuery),
		chromedp.SendKeys("#audit-action", "key.create"+kb.Enter, chromedp.ByID), chromedp.Sleep(300*time.Millisecond),
		chromedp.Text("#view", &auditText, chromedp.ByID)); err != nil {
		t.Fatalf("audit view: %v", err)
	}
	if !strings.Contains(auditText, "key.create") || !strings.Contains(auditText, "made-in-the-browser") || strings.Contains(auditText, secret) ||
		strings.Contains(auditText, "config.reload") {
		t.Errorf("audit view filtered to key.create: %q", auditText)
	}
	// Alice sees her own figures, and no admin views.
	var nav string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`sessionStorage.clear()`, nil), signIn(aliceKey),
		chromedp.Text("#total-spend", &spend, chromedp.ByID), chromedp.Text("#nav", &nav, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if spend != want || strings.Contains(nav, "Keys") || strings.Contains(nav, "Deployments") {
		t.Errorf("alice's page: spend %s (want %s, all hers), nav %q", spend, want, nav)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page raised console errors: %q", p)
	}
}

// thousands writes n as the page's toLocaleString('en-US') does.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
