package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	defaultListen = "127.0.0.1:8080"
	defaultPath   = "/readyz"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// run is the command without the process, for tests.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: healthcheck [flags] [PATH|URL]\n\n"+
			"Requests PATH (default %s) of the pi-node at PI_NODE_HTTP_LISTEN (default %s),\n"+
			"or an absolute URL, and exits 0 when the status is the expected one.\n\nFlags:\n", defaultPath, defaultListen)
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", 3*time.Second, "bound of the whole request")
	method := fs.String("X", http.MethodGet, "request method")
	data := fs.String("d", "", "request body; @- reads it from stdin, @FILE from a file")
	expect := fs.String("expect", "200", `status that counts as success, or "any"`)
	printResp := fs.Bool("print", false, "write the response (status line, headers, body) to stdout")
	tlsCA := fs.String("tls-ca", "", "CA (PEM) to verify the pi-node's HTTPS certificate with; default for the local pi-node: the certificate it serves (PI_NODE_HTTP_TLS_CERT)")
	var headers headerList
	fs.Var(&headers, "H", `request header "Name: value" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "healthcheck: at most one PATH or URL")
		return 2
	}
	want := 0 // any
	if *expect != "any" {
		n, err := strconv.Atoi(*expect)
		if err != nil || n < 100 || n > 599 {
			fmt.Fprintf(stderr, "healthcheck: -expect %q is not a status code or \"any\"\n", *expect)
			return 2
		}
		want = n
	}

	target, local := resolve(fs.Arg(0), getenv("PI_NODE_HTTP_LISTEN"), getenv("PI_NODE_HTTP_TLS_CERT") != "")
	body, err := readBody(*data, stdin)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, *method, target, body)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 2
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(stderr, "healthcheck: -H %q is not \"Name: value\"\n", h)
			return 2
		}
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if tok := getenv("PI_NODE_HTTP_TOKEN"); local && tok != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}

	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if strings.HasPrefix(target, "https://") {
		ca := *tlsCA
		if ca == "" && local {
			ca = getenv("PI_NODE_HTTP_TLS_CERT")
		}
		if ca != "" {
			pool, err := loadPool(ca)
			if err != nil {
				fmt.Fprintln(stderr, "healthcheck:", err)
				return 2
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
	}
	// No proxy from the environment: the probe talks to its own container.
	client := &http.Client{Transport: tr}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	if *printResp {
		dump, err := httputil.DumpResponse(resp, true)
		if err != nil {
			fmt.Fprintln(stderr, "healthcheck: reading the response:", err)
			return 1
		}
		_, _ = stdout.Write(dump)
	}
	if want != 0 && resp.StatusCode != want {
		if !*printResp {
			// Docker keeps the probe's output in `docker inspect`: say why.
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			fmt.Fprintf(stderr, "healthcheck: %s %s: %s %s\n", *method, target, resp.Status, bytes.TrimSpace(msg))
		}
		return 1
	}
	return 0
}

// loadPool reads PEM certificates into a pool: the CA, or the served
// certificate itself (a certificate in the pool is trusted as it is).
func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("-tls-ca %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// resolve turns the argument into a URL; local reports whether it names the
// pi-node of this container (a path, or nothing) rather than an absolute URL.
// The local pi-node serves HTTPS when it has a certificate (secure).
func resolve(arg, listen string, secure bool) (target string, local bool) {
	if strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://") {
		return arg, false
	}
	if arg == "" {
		arg = defaultPath
	}
	if !strings.HasPrefix(arg, "/") {
		arg = "/" + arg
	}
	scheme := "http://"
	if secure {
		scheme = "https://"
	}
	return scheme + localAddr(listen) + arg, true
}

// localAddr is where pi-node's --http-listen can be reached from inside its
// own network namespace: an unspecified host (0.0.0.0, ::, empty) is
// loopback.
func localAddr(listen string) string {
	if listen == "" {
		return defaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return defaultListen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func readBody(data string, stdin io.Reader) (io.Reader, error) {
	switch {
	case data == "":
		return nil, nil
	case data == "@-":
		b, err := io.ReadAll(stdin)
		return bytes.NewReader(b), err
	case strings.HasPrefix(data, "@"):
		b, err := os.ReadFile(data[1:])
		return bytes.NewReader(b), err
	}
	return strings.NewReader(data), nil
}
