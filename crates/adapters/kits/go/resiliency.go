// eapache/go-resiliency's circuit breaker around a plain net/http client, for herd's Go
// adapter (kit.go holds the protocol; main.go the clients' table). Built against Debian's
// golang-gopkg-eapache-go-resiliency.v1-dev, GOPATH mode like go-retryablehttp.
//
//	go-resiliency  breaker.New(5, 1, time.Second) (its README's example) around an
//	               http.Client without retries: breaker.Run(work), where work returns an
//	               error for a failed response (5xx, 408, 429) or no response
//
// Options: errors, successes, timeout_ms (integers), New's three arguments.
//
// Why a breaker and nothing else: herd's go-resiliency replica (herd policy go-resiliency)
// is a breaker alone, so the arm puts the library's breaker alone between the caller and
// the wire. A call the open breaker turns away (ErrBreakerOpen) never reaches the server:
// it is answered with attempts 0 and rejected 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"time"

	"gopkg.in/eapache/go-resiliency.v1/breaker"
)

// The version Debian's golang-gopkg-eapache-go-resiliency.v1-dev ships; the library exports
// no version, so build.sh checks the packaged one matches.
const resiliencyVersion = "1.2.0"

var resiliencyOptions = OptionSpec{"errors": "int", "successes": "int", "timeout_ms": "int"}

// statusError is a failed response, returned so that the breaker counts it.
type statusError int

func (s statusError) Error() string { return fmt.Sprintf("status %d", int(s)) }

// failedStatus is what the breaker counts as a failure: herd_retry::breaker::is_failure's statuses.
func failedStatus(s int) bool { return s >= 500 || s == 408 || s == 429 }

func buildResiliency(cfg Config, warmup bool) (*Client, error) {
	errs, succ := cfg.Int("errors", 5), cfg.Int("successes", 1)
	timeout := time.Duration(cfg.Int("timeout_ms", 1000)) * time.Millisecond
	if errs < 1 || succ < 1 || timeout < 0 {
		Fail("%s: errors and successes must be at least 1, timeout_ms at least 0", cfg.Client)
	}
	open := timeout
	if warmup {
		open = time.Millisecond // the same code paths (trip, reject, half-open) without waiting
	}
	b := breaker.New(errs, succ, open)
	tr := &http.Transport{
		MaxIdleConns: cfg.Pool, MaxIdleConnsPerHost: cfg.Pool, MaxConnsPerHost: cfg.Pool,
		IdleConnTimeout: 90 * time.Second,
	}
	hc := &http.Client{Transport: tr, Timeout: time.Duration(cfg.TimeoutMs) * time.Millisecond}
	policy := fmt.Sprintf("eapache/go-resiliency %s (Go %s) breaker.New(%d, %d, %v): opens at %d errors "+
		"without an error-free gap of %v, rejects (ErrBreakerOpen) while open, half-opens by timer after %v "+
		"and lets every call through until %d success(es) close it or one error reopens it; around an "+
		"http.Client without retries, Transport MaxIdleConns/MaxIdleConnsPerHost/MaxConnsPerHost %d; a 5xx, "+
		"408 or 429 returned as an error; ",
		resiliencyVersion, runtime.Version(), errs, succ, timeout, errs, timeout, timeout, succ, cfg.Pool)
	if cfg.TimeoutMs > 0 {
		policy += fmt.Sprintf("HTTPClient.Timeout %d ms per call; ", cfg.TimeoutMs)
	} else {
		policy += "no timeout; "
	}
	policy += "attempts counted per Transport round trip (httptrace GetConn), rejections answered with attempts 0"

	do := func(ctx context.Context, c *Call) (Result, error) {
		status := 0
		err := b.Run(func() error {
			ctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GetConn: func(string) { c.CountAttempt() }})
			req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, nil)
			if err != nil {
				return err
			}
			req.Header.Set(RequestIDHeader, c.Header)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
			if failedStatus(status) {
				return statusError(status)
			}
			return nil
		})
		switch {
		case errors.Is(err, breaker.ErrBreakerOpen):
			return Result{Error: "ErrBreakerOpen", Rejected: 1}, nil
		case status != 0:
			return Result{Status: status}, nil
		}
		return Result{}, err
	}
	return &Client{Policy: policy, Do: do, Close: tr.CloseIdleConnections}, nil
}
