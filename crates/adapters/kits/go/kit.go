// The protocol half of herd's Go adapter: external-arm protocol v1
// (docs/external-arm-protocol.md), stdlib only. main.go holds the clients' configuration;
// another Go adapter can copy this file and write its own main.go:
//
//	func build(cfg Config, warmup bool) (*Client, error) {
//		// cfg.URL, cfg.Method, cfg.Pool, cfg.TimeoutMs, cfg.Int("key", def), ...
//		// warmup: the throwaway warm-up client (use the smallest delay that still retries)
//		return &Client{
//			Policy: "what is set up, as set up",
//			Do: func(ctx context.Context, c *Call) (Result, error) {
//				// ctx carries c (CallFrom(req.Context()) in a hook); c.Header is the
//				// x-herd-request value; c.Method and c.URL the request (a trace line's
//				// method and path if herd sent them, else --method and --url);
//				// c.CountAttempt() per attempt
//				return Result{Status: 200}, nil
//			},
//		}, nil
//	}
//
//	func main() {
//		Run(map[string]Builder{"go-x": build}, map[string]OptionSpec{"go-x": {"retries": "int"}})
//	}
//
// Run parses --client --url [--method GET] [--pool 256] [--timeout-ms 0] [--options JSON],
// refuses an unknown client or an unknown or ill-typed option (a sentence on stderr naming
// it, exit 2, before the handshake), warms the client up against its own loopback server
// (200, 503 and TCP resets in turn), prints the handshake, starts each {"id":N} at once on
// its own goroutine, writes one answer line per request (Do's error becomes ok:false with
// ErrorCode(err)), and prints {"done":true} and exits 0 once stdin is closed and every
// request is answered.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

const (
	protocolVersion = 1
	// RequestIDHeader goes on every attempt of a logical request.
	RequestIDHeader = "x-herd-request"
	warmupBatches   = 10
	warmupBatch     = 40
)

// Config is the command line, with the validated --options.
type Config struct {
	Client    string
	URL       string
	Method    string
	Pool      int
	TimeoutMs int
	Options   map[string]interface{}
}

// Int returns option key, or def when absent (validated as "int" by Run).
func (c Config) Int(key string, def int) int {
	if v, ok := c.Options[key]; ok {
		n, _ := v.(json.Number).Int64()
		return int(n)
	}
	return def
}

// Float returns option key, or def when absent (validated as "float").
func (c Config) Float(key string, def float64) float64 {
	if v, ok := c.Options[key]; ok {
		f, _ := v.(json.Number).Float64()
		return f
	}
	return def
}

// Bool returns option key, or def when absent (validated as "bool").
func (c Config) Bool(key string, def bool) bool {
	if v, ok := c.Options[key]; ok {
		return v.(bool)
	}
	return def
}

// String returns option key, or def when absent (validated as "string").
func (c Config) String(key string, def string) string {
	if v, ok := c.Options[key]; ok {
		return v.(string)
	}
	return def
}

// OptionSpec declares the options a client accepts: key -> "int", "float", "bool", "string",
// "string|object" (a string, or a JSON object left as parsed, numbers as json.Number).
type OptionSpec map[string]string

// Call is one logical request.
type Call struct {
	ID         uint64
	Header     string // the x-herd-request value
	Method     string // the request line's method, else --method
	URL        string // --url with the request line's path in place of its own, else --url
	attempts   int64
	lastStatus int64
}

// CountAttempt counts one attempt (call it from a hook that sees every attempt).
func (c *Call) CountAttempt() { atomic.AddInt64(&c.attempts, 1) }

// Attempts is the count so far.
func (c *Call) Attempts() int { return int(atomic.LoadInt64(&c.attempts)) }

// SetLastStatus records the status of the latest attempt (0: it ended without a response).
func (c *Call) SetLastStatus(s int) { atomic.StoreInt64(&c.lastStatus, int64(s)) }

// LastStatus is what SetLastStatus recorded last.
func (c *Call) LastStatus() int { return int(atomic.LoadInt64(&c.lastStatus)) }

type callKey struct{}

// CallFrom finds the Call in a context derived from the one Do was given.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Result is how a logical request ended. Status 0: no response. Attempts 0: use the counter
// (and when nothing was counted, null, or 0 with Rejected set). OK nil: 2xx. Error "": none
// (set by Run from Do's error). Rejected: calls the library's own breaker turned away for
// this request, never sent (a request it turned away outright is answered attempts 0).
type Result struct {
	Status   int
	Attempts int
	OK       *bool
	Error    string
	Rejected int
}

// Client is a built client.
type Client struct {
	Policy string
	Do     func(ctx context.Context, c *Call) (Result, error)
	Close  func()
}

// Builder builds a client; warmup is true for the throwaway warm-up client.
type Builder func(cfg Config, warmup bool) (*Client, error)

// Fail says why on stderr and exits with status 2.
func Fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "herd go adapter: "+format+"\n", args...)
	os.Exit(2)
}

// ErrorCode names an error the way herd's answers do (ECONNRESET, ETIMEDOUT, ...), else its type.
func ErrorCode(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "ETIMEDOUT"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, context.Canceled):
		return "ECANCELED"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}

func validateOptions(client, raw string, spec OptionSpec) map[string]interface{} {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var opts map[string]interface{}
	if err := dec.Decode(&opts); err != nil || opts == nil {
		Fail("--options must be a JSON object, got %s", raw)
	}
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	accepted := make([]string, 0, len(keys))
	for _, k := range keys {
		accepted = append(accepted, fmt.Sprintf("%s (%s)", k, spec[k]))
	}
	if len(accepted) == 0 {
		accepted = append(accepted, "none")
	}
	for key, v := range opts {
		kind, ok := spec[key]
		if !ok {
			Fail("client %s does not accept option %q (it accepts: %s)", client, key, strings.Join(accepted, ", "))
		}
		good := false
		switch kind {
		case "int":
			n, isNum := v.(json.Number)
			_, err := strconv.ParseInt(string(n), 10, 64)
			good = isNum && err == nil
		case "float":
			n, isNum := v.(json.Number)
			f, err := n.Float64()
			good = isNum && err == nil && !math.IsInf(f, 0)
		case "bool":
			_, good = v.(bool)
		case "string":
			_, good = v.(string)
		case "string|object":
			_, isString := v.(string)
			_, isObject := v.(map[string]interface{})
			good = isString || isObject
		}
		if !good {
			b, _ := json.Marshal(v)
			Fail("client %s: option %q must be %s, got %s", client, key, kind, b)
		}
	}
	return opts
}

func parseArgs(clients map[string]Builder, options map[string]OptionSpec) Config {
	fs := flag.NewFlagSet("adapter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	client := fs.String("client", "", "")
	url := fs.String("url", "", "")
	method := fs.String("method", "GET", "")
	pool := fs.Int("pool", 256, "")
	timeoutMs := fs.Int("timeout-ms", 0, "")
	rawOptions := fs.String("options", "{}", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		Fail("%v", err)
	}
	if fs.NArg() > 0 {
		Fail("unexpected argument %s", fs.Arg(0))
	}
	if _, ok := clients[*client]; !ok {
		ids := make([]string, 0, len(clients))
		for id := range clients {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		Fail("unknown client %q (expected one of: %s)", *client, strings.Join(ids, ", "))
	}
	if !strings.HasPrefix(*url, "http://") && !strings.HasPrefix(*url, "https://") {
		Fail("--url %q is not an http(s) URL", *url)
	}
	if *pool < 1 {
		Fail("--pool must be a positive integer")
	}
	if *timeoutMs < 0 {
		Fail("--timeout-ms must be a non-negative integer (0: no timeout)")
	}
	return Config{
		Client: *client, URL: *url, Method: strings.ToUpper(*method), Pool: *pool,
		TimeoutMs: *timeoutMs, Options: validateOptions(*client, *rawOptions, options[*client]),
	}
}

func answer(c *Call, r Result, err error) map[string]interface{} {
	attempts := interface{}(nil)
	if r.Attempts > 0 {
		attempts = r.Attempts
	} else if n := c.Attempts(); n > 0 {
		attempts = n
	} else if r.Rejected > 0 {
		attempts = 0
	}
	status := interface{}(nil)
	if r.Status != 0 {
		status = r.Status
	}
	errText := interface{}(nil)
	ok := r.Status >= 200 && r.Status < 300
	if r.OK != nil {
		ok = *r.OK
	}
	if err != nil {
		ok, errText = false, ErrorCode(err)
	} else if r.Error != "" {
		errText = r.Error
	}
	a := map[string]interface{}{"id": c.ID, "ok": ok, "status": status, "error": errText, "attempts": attempts}
	if r.Rejected > 0 {
		a["rejected"] = r.Rejected
	}
	return a
}

func runCall(cl *Client, id uint64, method, url string) map[string]interface{} {
	c := &Call{ID: id, Header: strconv.FormatUint(id, 10), Method: method, URL: url}
	ctx := context.WithValue(context.Background(), callKey{}, c)
	r, err := cl.Do(ctx, c)
	return answer(c, r, err)
}

// warmUp drives a warm-up client against a loopback server answering 200, 503 and resets.
func warmUp(build Builder, cfg Config) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		Fail("warm-up listen: %v", err)
	}
	var n int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch atomic.AddInt64(&n, 1) % 4 {
		case 1:
			w.WriteHeader(503)
			io.WriteString(w, "warm-up 503")
		case 2:
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				conn.Close()
			}
		default:
			io.WriteString(w, "ok")
		}
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	wcfg := cfg
	wcfg.URL = "http://" + ln.Addr().String() + "/"
	cl, err := build(wcfg, true)
	if err != nil {
		Fail("%v", err)
	}
	for b := 0; b < warmupBatches; b++ {
		var wg sync.WaitGroup
		for i := 0; i < warmupBatch; i++ {
			wg.Add(1)
			go func(id uint64) { defer wg.Done(); runCall(cl, id, wcfg.Method, wcfg.URL) }(uint64(b*warmupBatch + i))
		}
		wg.Wait()
	}
	if cl.Close != nil {
		cl.Close()
	}
	srv.Close()
}

// Run is the whole adapter: see the file comment.
func Run(clients map[string]Builder, options map[string]OptionSpec) {
	cfg := parseArgs(clients, options)
	build := clients[cfg.Client]
	warmUp(build, cfg)
	cl, err := build(cfg, false)
	if err != nil {
		Fail("%v", err)
	}

	// One writer: answers are batched into one write while more are queued.
	lines := make(chan []byte, 4096)
	written := make(chan struct{})
	go func() {
		out := bufio.NewWriterSize(os.Stdout, 64<<10)
		for line := range lines {
			out.Write(line)
			if len(lines) == 0 {
				if err := out.Flush(); err != nil {
					os.Exit(3) // herd went away
				}
			}
		}
		out.Flush()
		close(written)
	}()
	emit := func(v interface{}) {
		b, _ := json.Marshal(v)
		lines <- append(b, '\n')
	}
	emit(map[string]interface{}{"herd_adapter": protocolVersion, "client": cfg.Client, "policy": cl.Policy})

	// A request line's path replaces --url's path and query.
	u, err := neturl.Parse(cfg.URL)
	if err != nil {
		Fail("--url %q: %v", cfg.URL, err)
	}
	origin := u.Scheme + "://" + u.Host
	var wg sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for lineNo := 1; in.Scan(); lineNo++ {
		text := strings.TrimSpace(in.Text())
		if text == "" {
			continue
		}
		var msg struct {
			ID     *json.Number `json:"id"`
			Method *string      `json:"method"`
			Path   *string      `json:"path"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var id uint64
		err := dec.Decode(&msg)
		if err == nil && msg.ID != nil {
			id, err = strconv.ParseUint(string(*msg.ID), 10, 64)
		}
		if err != nil || msg.ID == nil || id >= 1<<53 {
			Fail("stdin line %d: expected {\"id\":N}, got %.200s", lineNo, text)
		}
		method, target := cfg.Method, cfg.URL
		if msg.Method != nil {
			method = *msg.Method
		}
		if msg.Path != nil {
			if !strings.HasPrefix(*msg.Path, "/") {
				Fail("stdin line %d: path must start with /, got %.200s", lineNo, text)
			}
			target = origin + *msg.Path
		}
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			emit(runCall(cl, id, method, target))
		}(id)
	}
	wg.Wait()
	emit(map[string]bool{"done": true})
	close(lines)
	<-written
	if cl.Close != nil {
		cl.Close()
	}
	os.Exit(0)
}
