package responses

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// InputItemsPage is one page of a response's input items: limit (1–100,
// default 20), order (desc by default) and after (an item id).
func InputItemsPage(rawQuery string, input json.RawMessage) ([]byte, *providers.APIError) {
	q, err := ledger.ParseRawQuery(rawQuery)
	if err != nil {
		return nil, &providers.APIError{Status: http.StatusBadRequest, Message: err.Error()}
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "limit", Message: "limit must be an integer from 1 to 100"}
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "", "desc":
		order = "desc"
	case "asc":
	default:
		return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "order", Message: "order must be asc or desc"}
	}
	var items []json.RawMessage
	_ = json.Unmarshal(input, &items)
	if order == "desc" {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	ids := make([]string, len(items))
	for i, it := range items {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &head)
		ids[i] = head.ID
	}
	start := 0
	if after := q.Get("after"); after != "" {
		start = -1
		for i, id := range ids {
			if id == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "after", Message: fmt.Sprintf("no input item %q in this response", after)}
		}
	}
	end := min(start+limit, len(items))
	page := listPage{Object: "list", Data: items[start:end], HasMore: end < len(items)}
	if end > start {
		page.FirstID, page.LastID = &ids[start], &ids[end-1]
	}
	b, _ := json.Marshal(page)
	return b, nil
}

// listPage is one page of a list of items, as OpenAI's lists are.
type listPage struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}
