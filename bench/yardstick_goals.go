package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// The goals of issue 35 item 6, as ratios to plain Caddy (or bounds)
// from one run.
const (
	goalControlsRatio   = 1.0
	goalC1Slack         = 0.10 // added p99 at concurrency 1 within 10 % of Caddy's own
	goalTTFT            = 300 * time.Microsecond
	goalStreams         = 512
	goalTranslatedRatio = 0.95
)

// ysFigures are the run's headline figures per row key; a key is absent
// when its row was not measured (or measured nothing).
type ysFigures struct {
	sustained map[string]float64       // req/s meeting the criteria; 0: no level did
	addedP99  map[string]time.Duration // at concurrency 1, over direct
	addedTTFT map[string]time.Duration // p99, over direct
	streams   map[string]int           // stall-free paced streams sustained
}

func figuresOf(c1 []c1Result, load []sustainResult, ttft []ttftResult, streams []streamsResult) ysFigures {
	f := ysFigures{sustained: map[string]float64{}, addedP99: map[string]time.Duration{}, addedTTFT: map[string]time.Duration{}, streams: map[string]int{}}
	for _, r := range load {
		best, _ := sustainedBest(r.points)
		f.sustained[r.key] = best.rps
	}
	var direct []time.Duration
	for _, r := range c1 {
		if r.key == "direct" {
			direct = r.lat
		}
	}
	for _, r := range c1 {
		if r.key != "direct" && len(r.lat) > 0 && len(direct) > 0 {
			f.addedP99[r.key] = addedP99(r.lat, direct)
		}
	}
	direct = nil
	for _, r := range ttft {
		if r.key == "direct" {
			direct = r.ttft
		}
	}
	for _, r := range ttft {
		if r.key != "direct" && len(r.ttft) > 0 && len(direct) > 0 {
			f.addedTTFT[r.key] = pct(r.ttft, .99) - pct(direct, .99)
		}
	}
	for _, r := range streams {
		f.streams[r.key] = r.sustained()
	}
	return f
}

// goal is one judged goal: verdict is "met", "missed" or why it could
// not be judged.
type goal struct {
	name, measured, verdict string
}

func verdict(pass bool) string {
	if pass {
		return "met"
	}
	return "missed"
}

// judgeGoals judges the goals from one run's figures. controls
// says the controlled gateway ran; streamLevels are the levels climbed.
func judgeGoals(f ysFigures, controls bool, streamLevels []int) []goal {
	var out []goal
	caddyRPS, haveCaddy := f.sustained["caddy"]
	ratioGoal := func(key, name string, min float64) {
		g := goal{name: fmt.Sprintf("%s: sustained req/s ≥ %.2f× plain Caddy's", name, min)}
		rps, ok := f.sustained[key]
		switch {
		case key == "gw-controls" && !controls:
			g.verdict = "not measured: needs -postgres and -redis"
		case !ok || !haveCaddy:
			g.verdict = "not measured"
		case caddyRPS <= 0:
			g.measured, g.verdict = fmt.Sprintf("%.0f req/s; Caddy met the criteria at no level", rps), "not judged"
		default:
			r := rps / caddyRPS
			g.measured, g.verdict = fmt.Sprintf("%.2f× (%.0f against %.0f req/s)", r, rps, caddyRPS), verdict(r >= min)
		}
		out = append(out, g)
	}
	ratioGoal("gw-controls", "team controls on", goalControlsRatio)

	// perRow judges one goal for pass-through and for controls on; judge
	// says what was measured and the verdict, ok false when nothing was.
	perRow := func(name string, judge func(key string) (measured, v string, ok bool)) {
		for _, k := range []struct{ key, name string }{{"gw-openai", "pass-through"}, {"gw-controls", "team controls on"}} {
			g := goal{name: k.name + ": " + name}
			m, v, ok := judge(k.key)
			switch {
			case k.key == "gw-controls" && !controls:
				g.verdict = "not measured: needs -postgres and -redis"
			case !ok:
				g.verdict = "not measured"
			default:
				g.measured, g.verdict = m, v
			}
			out = append(out, g)
		}
	}
	perRow(fmt.Sprintf("added p99 at concurrency 1 within %.0f %% of Caddy's own", 100*goalC1Slack), func(key string) (string, string, bool) {
		added, ok := f.addedP99[key]
		caddy, haveCaddy := f.addedP99["caddy"]
		if !ok || !haveCaddy {
			return "", "", false
		}
		// Caddy's own added p99 can read below zero on a noisy run; the
		// slack is then taken on its size.
		bound := caddy + time.Duration(goalC1Slack*float64(abs(caddy)))
		m := fmt.Sprintf("%s against Caddy's %s", signedUs(added), signedUs(caddy))
		if caddy > 0 {
			m += fmt.Sprintf(" (%.2f×)", float64(added)/float64(caddy))
		}
		return m, verdict(added <= bound), true
	})
	perRow(fmt.Sprintf("added TTFT p99 ≤ %s", us(goalTTFT)), func(key string) (string, string, bool) {
		added, ok := f.addedTTFT[key]
		m := signedUs(added)
		if c, ok := f.addedTTFT["caddy"]; ok {
			m += fmt.Sprintf(" (Caddy's %s)", signedUs(c))
		}
		return m, verdict(added <= goalTTFT), ok
	})
	perRow(fmt.Sprintf("%d stall-free paced streams", goalStreams), func(key string) (string, string, bool) {
		n, ok := f.streams[key]
		if !slices.Contains(streamLevels, goalStreams) {
			return fmt.Sprint(n), fmt.Sprintf("not judged: -ys-stream-levels does not reach %d", goalStreams), ok
		}
		return fmt.Sprint(n), verdict(n >= goalStreams), ok
	})

	ratioGoal("gw-responses", "Responses translated", goalTranslatedRatio)
	ratioGoal("gw-gemini", "Gemini translated", goalTranslatedRatio)
	ratioGoal("gw-messages", "Messages translated", goalTranslatedRatio)
	return out
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func printGoals(w io.Writer, goals []goal) {
	fmt.Fprintln(w, "\n### Goals (issue 35 item 6), from this run")
	fmt.Fprintln(w, "\n| goal | measured | verdict |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, g := range goals {
		v := g.verdict
		if v == "met" || v == "missed" {
			v = "**" + v + "**"
		}
		m := g.measured
		if m == "" {
			m = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", g.name, m, v)
	}
}
