package proctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ProbeClient is for health and status polls and verification reads:
// short timeouts, so a dead node costs a poll round, not a minute.
var ProbeClient = &http.Client{Timeout: 5 * time.Second}

// Do sends one request (a JSON body when body is not nil) and reads the
// whole answer.
func Do(ctx context.Context, hc *http.Client, method, url string, body []byte) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, resp.Header, nil, err
	}
	return resp.StatusCode, resp.Header, data, nil
}

// GetJSON GETs url with ProbeClient and decodes a 200 answer into v.
func GetJSON(url string, v any) error {
	st, _, body, err := Do(context.Background(), ProbeClient, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, st, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w: %s", url, err, body)
	}
	return nil
}

// Ready returns nil when a pi-node's /readyz at base answers 200.
func Ready(base string) error {
	st, _, body, err := Do(context.Background(), ProbeClient, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("%d %s", st, body)
	}
	return nil
}
