// herd external-arm adapter (protocol v1) for hashicorp/go-retryablehttp, (resiliency.go)
// eapache/go-resiliency's breaker and (grpc.go) grpc-go; kit.go holds the protocol. Build:
// ./build.sh (GOPATH mode against Debian's /usr/share/gocode).
//
//	./herd-go-arm --client go-retryablehttp --url http://127.0.0.1:PORT/ \
//	    [--method GET] [--pool 256] [--timeout-ms 2000] [--options '{"retry_max":4}']
//
// Clients:
//
//	go-retryablehttp         retryablehttp.NewClient() defaults: RetryMax 4, RetryWaitMin 1 s,
//	                         RetryWaitMax 30 s, DefaultBackoff, DefaultRetryPolicy
//	go-retryablehttp-jitter  the same with Backoff = LinearJitterBackoff
//	go-resiliency            breaker.New(5, 1, time.Second), no retries (resiliency.go)
//	go-grpc                  a grpc-go ClientConn configured by the arm's service config,
//	                         unary calls with raw bytes (grpc.go)
//
// Options: retry_max, retry_wait_min_ms, retry_wait_max_ms (integers); go-resiliency's in
// resiliency.go; go-grpc's service_config in grpc.go.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strings"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

// The version Debian's golang-github-hashicorp-go-retryablehttp-dev ships; the library
// exports no version, so build.sh checks the packaged one matches.
const libraryVersion = "0.7.1"

var options = OptionSpec{"retry_max": "int", "retry_wait_min_ms": "int", "retry_wait_max_ms": "int"}

func build(cfg Config, warmup bool) (*Client, error) {
	rc := retryablehttp.NewClient()
	rc.Logger = nil // quiet: stderr is herd's diagnostics channel
	rc.RetryMax = cfg.Int("retry_max", rc.RetryMax)
	rc.RetryWaitMin = time.Duration(cfg.Int("retry_wait_min_ms", int(rc.RetryWaitMin/time.Millisecond))) * time.Millisecond
	rc.RetryWaitMax = time.Duration(cfg.Int("retry_wait_max_ms", int(rc.RetryWaitMax/time.Millisecond))) * time.Millisecond
	backoff := "DefaultBackoff: min(RetryWaitMin·2^n, RetryWaitMax) before retry n+1 (n from 0), " +
		"Retry-After (integer seconds) on 429/503 replaces it, uncapped"
	if cfg.Client == "go-retryablehttp-jitter" {
		rc.Backoff = retryablehttp.LinearJitterBackoff
		backoff = "LinearJitterBackoff: U[RetryWaitMin, RetryWaitMax]·(n+1) before retry n+1, no Retry-After"
	}
	policy := fmt.Sprintf("go-retryablehttp %s (Go %s) NewClient(): RetryMax %d, RetryWaitMin %v, RetryWaitMax %v, %s; "+
		"DefaultRetryPolicy (connection errors except bad scheme/TLS/redirects; 429; 0 and 5xx except 501); "+
		"an exhausted retry returns an error and closes the pool's idle connections (answered with the last status); ",
		libraryVersion, runtime.Version(), rc.RetryMax, rc.RetryWaitMin, rc.RetryWaitMax, backoff)
	if warmup {
		rc.RetryWaitMin, rc.RetryWaitMax = 0, 0 // the same code paths without waiting
	}

	// NewClient's HTTPClient is cleanhttp.DefaultPooledClient(); its Transport's pool is the arm's.
	tr := rc.HTTPClient.Transport.(*http.Transport)
	tr.MaxIdleConns = cfg.Pool
	tr.MaxIdleConnsPerHost = cfg.Pool
	tr.MaxConnsPerHost = cfg.Pool
	rc.HTTPClient.Timeout = time.Duration(cfg.TimeoutMs) * time.Millisecond
	policy += fmt.Sprintf("cleanhttp pooled Transport MaxIdleConns/MaxIdleConnsPerHost/MaxConnsPerHost %d, "+
		"IdleConnTimeout %v; ", cfg.Pool, tr.IdleConnTimeout)
	if cfg.TimeoutMs > 0 {
		policy += fmt.Sprintf("HTTPClient.Timeout %d ms per attempt (retried); ", cfg.TimeoutMs)
	} else {
		policy += "no timeout; "
	}
	policy += "attempts counted per Transport round trip (httptrace GetConn), which includes net/http's own re-send of an idempotent request whose reused connection died"

	// Attempts. RequestLogHook runs before every attempt go-retryablehttp makes, but
	// net/http's Transport itself re-sends an idempotent request, once per failure, when a
	// reused keep-alive connection dies before any response (a server reset or close), and
	// the upstream counts those too. So the count is taken one level down, from an
	// httptrace GetConn, which the Transport calls for every round trip it starts,
	// its own re-sends included. RequestLogHook only clears the last status, and
	// ResponseLogHook (after every attempt that got a response) records it; the request's
	// context carries the kit's Call.
	rc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, _ int) {
		if c := CallFrom(req.Context()); c != nil {
			c.SetLastStatus(0)
		}
	}
	rc.ResponseLogHook = func(_ retryablehttp.Logger, resp *http.Response) {
		if c := CallFrom(resp.Request.Context()); c != nil {
			c.SetLastStatus(resp.StatusCode)
		}
	}

	do := func(ctx context.Context, c *Call) (Result, error) {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GetConn: func(string) { c.CountAttempt() }})
		req, err := retryablehttp.NewRequestWithContext(ctx, c.Method, c.URL, nil)
		if err != nil {
			return Result{}, err
		}
		req.Header.Set(RequestIDHeader, c.Header)
		resp, err := rc.Do(req)
		if err != nil {
			// Out of retries on a status: the library drained that response and returned
			// "giving up after N attempt(s)"; it ended on a response, so answer its status.
			if s := c.LastStatus(); s != 0 && strings.Contains(err.Error(), "giving up after") {
				return Result{Status: s}, nil
			}
			return Result{}, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return Result{Status: resp.StatusCode}, nil
	}
	return &Client{Policy: policy, Do: do, Close: rc.HTTPClient.CloseIdleConnections}, nil
}

// The clients this program makes and their options. go-grpc is added by grpc.go when
// Debian's grpc-go is installed, else by grpc_absent.go, which says what to install: the
// other clients do not need grpc-go's sources.
var (
	builders = map[string]Builder{"go-retryablehttp": build, "go-retryablehttp-jitter": build,
		"go-resiliency": buildResiliency}
	optionSpecs = map[string]OptionSpec{"go-retryablehttp": options, "go-retryablehttp-jitter": options,
		"go-resiliency": resiliencyOptions, "go-grpc": grpcOptions}
)

var grpcOptions = OptionSpec{"service_config": "string|object"}

func main() {
	Run(builders, optionSpecs)
}
