//go:build herdgrpc
// +build herdgrpc

// grpc-go as an arm (client go-grpc): one ClientConn configured by the arm's service config,
// making unary calls with raw bytes (a codec that passes []byte through: no protoc, no
// generated code), beside herd's replica of it (herd_retry::grpc, profile grpc-go-1.33).
//
// The scenario's options = { service_config = ... } goes to the channel unchanged, through
// grpc.WithDefaultServiceConfig (a JSON string, or the table as JSON), as a grpc-go user
// passes one; the dial fails on a config grpc-go refuses. The call goes to the method the
// config names first (/herd.Herd/Call for [{}]), the one herd's replica looks its policy up
// for. --timeout-ms is the call's deadline, which in gRPC covers every attempt (A6).
//
// Retries: grpc-go 1.33 (the version Debian 12 packages) ignores a retryPolicy unless
// GRPC_GO_RETRY=on is in its environment, read once when the grpc packages initialise
// (internal/envconfig/envconfig.go; dialoptions.go then sets disableRetry), so before any
// of this file runs: herd starts the Go adapter with it set, and the policy line says
// whether it was.
//
// Attempts: grpc-go has no per-attempt hook for callers. A client interceptor wraps the
// whole call, retries inside it, and the stats.Handler's Begin is per call too (stream.go
// newClientStream; retryLocked starts later attempts with no handler). What is per attempt
// is the transport's stats.OutHeader: http2Client.NewStream (internal/transport/
// http2_client.go) reports one for every stream it opens, the first attempt's and every
// retry's, with the call's context, so a handler on the ClientConn counts exactly the
// streams sent to the server, those that end in a reset included (which the x-herd-attempt
// trailer the grpcio and grpc-js adapters read cannot report).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

func init() { builders["go-grpc"] = buildGrpc }

const defaultGrpcPath = "/herd.Herd/Call"

// rawCodec sends and receives the bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	switch b := v.(type) {
	case []byte:
		return b, nil
	case *[]byte:
		return *b, nil
	}
	return nil, fmt.Errorf("raw codec: cannot send %T", v)
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot receive into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "herd-raw" }

// attemptCounter counts every stream the transport opens for a call (see the file comment).
type attemptCounter struct{}

func (attemptCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (attemptCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.OutHeader); ok && h.Client {
		if c := CallFrom(ctx); c != nil {
			c.CountAttempt()
		}
	}
}

func (attemptCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (attemptCounter) HandleConn(context.Context, stats.ConnStats) {}

// grpcServiceConfig is the arm's service config as JSON text, or "" when it has none.
func grpcServiceConfig(cfg Config) string {
	v, ok := cfg.Options["service_config"]
	if !ok {
		return ""
	}
	text, isString := v.(string)
	if !isString {
		b, err := json.Marshal(v)
		if err != nil {
			Fail("--options: service_config: %v", err)
		}
		text = string(b)
	}
	var parsed interface{}
	if err := json.Unmarshal([]byte(text), &parsed); err != nil {
		Fail("--options: service_config is not JSON (%v)", err)
	}
	return text
}

// grpcCallPath is the method herd calls: the first name of the first method config.
func grpcCallPath(sc string) string {
	if sc == "" {
		return defaultGrpcPath
	}
	var parsed struct {
		MethodConfig []struct {
			Name []struct {
				Service string `json:"service"`
				Method  string `json:"method"`
			} `json:"name"`
		} `json:"methodConfig"`
	}
	if json.Unmarshal([]byte(sc), &parsed) != nil || len(parsed.MethodConfig) == 0 ||
		len(parsed.MethodConfig[0].Name) == 0 {
		return defaultGrpcPath
	}
	n := parsed.MethodConfig[0].Name[0]
	service, method := n.Service, n.Method
	if service == "" {
		service = "herd.Herd"
	}
	if method == "" {
		method = "Call"
	}
	return "/" + service + "/" + method
}

// grpcCodeNames are the canonical status names, as grpcio and grpc-js report them
// (codes.Code's String() says "Unavailable").
var grpcCodeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

func buildGrpc(cfg Config, warmup bool) (*Client, error) {
	if warmup {
		// The warm-up server speaks HTTP/1.1 only; a gRPC channel has nothing to warm there.
		return &Client{Policy: "warm-up", Do: func(context.Context, *Call) (Result, error) {
			return Result{Status: 200, Attempts: 1}, nil
		}}, nil
	}
	sc := grpcServiceConfig(cfg)
	path := grpcCallPath(sc)
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("--url %q: %v", cfg.URL, err)
	}
	target := u.Host
	opts := []grpc.DialOption{grpc.WithInsecure(), grpc.WithStatsHandler(attemptCounter{})}
	if sc != "" {
		opts = append(opts, grpc.WithDefaultServiceConfig(sc))
	}
	// Not blocking: the connection is made by the first call, as an application's is.
	conn, err := grpc.Dial(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("grpc.Dial(%s): %v", target, err)
	}

	retry := "GRPC_GO_RETRY=on (retryPolicy applied)"
	if !strings.EqualFold(os.Getenv("GRPC_GO_RETRY"), "on") {
		retry = "GRPC_GO_RETRY not on: retryPolicy and retryThrottling ignored, as grpc-go 1.33 does by default"
	}
	shown := sc
	if shown == "" {
		shown = "none (no retries)"
	}
	deadline := "no deadline"
	if cfg.TimeoutMs > 0 {
		deadline = fmt.Sprintf("deadline %d ms per call (all attempts)", cfg.TimeoutMs)
	}
	policy := fmt.Sprintf("grpc-go %s (%s) ClientConn to %s, WithDefaultServiceConfig=%s; %s; "+
		"unary %s with raw bytes; %s; attempts counted per stream opened (stats.Handler OutHeader)",
		grpc.Version, runtime.Version(), target, shown, retry, path, deadline)

	codec := grpc.ForceCodec(rawCodec{})
	do := func(ctx context.Context, c *Call) (Result, error) {
		ctx = metadata.AppendToOutgoingContext(ctx, RequestIDHeader, c.Header)
		if cfg.TimeoutMs > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(cfg.TimeoutMs)*time.Millisecond)
			defer cancel()
		}
		req, resp := []byte{}, []byte{}
		err := conn.Invoke(ctx, path, &req, &resp, codec)
		if err == nil {
			return Result{Status: 200}, nil
		}
		// Every gRPC answer is HTTP 200; the call's outcome is its status.
		s, _ := status.FromError(err)
		name, known := grpcCodeNames[s.Code()]
		if !known {
			name = fmt.Sprint(uint32(s.Code()))
		}
		notOK := false
		return Result{Status: 200, OK: &notOK, Error: name}, nil
	}
	return &Client{Policy: policy, Do: do, Close: func() { conn.Close() }}, nil
}
