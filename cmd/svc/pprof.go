package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"

	"svc/internal/platform/config"
)

// startPprof serves Go's profiles on cfg.PprofAddr, which must be a
// loopback address: profiles show code paths and may show data. It also
// samples blocking and mutex contention, which cost a little while on.
func startPprof(cfg config.Config, log *slog.Logger) error {
	if cfg.PprofAddr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(cfg.PprofAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("SVC_PPROF_ADDR=%s: want a loopback host:port such as 127.0.0.1:6060", cfg.PprofAddr)
	}
	ln, err := net.Listen("tcp", cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("SVC_PPROF_ADDR=%s: cannot listen: %v", cfg.PprofAddr, oneLine(err))
	}
	runtime.SetBlockProfileRate(100_000) // one sample per 100 µs blocked
	runtime.SetMutexProfileFraction(100)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() { _ = http.Serve(ln, mux) }()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return nil
}
