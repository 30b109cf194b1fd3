package proctest

import (
	"bytes"
	"context"
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
