package sink

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/internal/versitygw"
)

// BenchmarkCompress reports throughput and ratio (raw/compressed) of zstd
// level 3, as the sink streams it (SHA-256 included), and of gzip level 6,
// side by side on the same payloads in the same run. The payloads are the
// simulator's own answers, one realistic call per provider of the default
// registry (KIS, ECOS JSON and XML, FRED, UPBIT, data.go.kr JSON and XML;
// see simulatorPayloads). MB/s is wall-clock on one goroutine; cpu-MB/s
// divides by the process's CPU time instead, which holds steady on a busy
// machine: MB/s per core.
func BenchmarkCompress(b *testing.B) {
	for _, p := range simulatorPayloads(b) {
		b.Run(p.name+"/zstd-3", func(b *testing.B) {
			c := newCompressor()
			var out bytes.Buffer
			b.SetBytes(int64(len(p.body)))
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				out.Reset()
				if _, _, err := c.stream(context.Background(), &out, bytes.NewReader(p.body), nil); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, len(p.body))
			b.ReportMetric(float64(len(p.body))/float64(out.Len()), "ratio")
			b.ReportMetric(float64(out.Len()), "compressed-bytes")
		})
		b.Run(p.name+"/gzip-6", func(b *testing.B) {
			var out bytes.Buffer
			w, _ := gzip.NewWriterLevel(&out, 6)
			b.SetBytes(int64(len(p.body)))
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				out.Reset()
				w.Reset(&out)
				if _, err := w.Write(p.body); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, len(p.body))
			b.ReportMetric(float64(len(p.body))/float64(out.Len()), "ratio")
			b.ReportMetric(float64(out.Len()), "compressed-bytes")
		})
	}
}

// BenchmarkDecompress reports zstd decoding throughput of the same
// payloads, what `sluice lake verify` spends per object.
func BenchmarkDecompress(b *testing.B) {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	defer dec.Close()
	for _, p := range simulatorPayloads(b) {
		z := enc.EncodeAll(p.body, nil)
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.body)))
			for b.Loop() {
				if err := dec.Reset(bytes.NewReader(z)); err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, dec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkS3Upload1GiB streams 1 GiB through the S3 sink into versitygw
// with the default part size and concurrency, and reports the sink's peak
// buffered bytes and the process's peak RSS (VmHWM). The body is
// incompressible, the worst case for memory: every byte becomes a part.
//
// peak-buffered-MiB is the sink's own accounting and holds whatever else
// runs. peak-RSS-MiB does not: VmHWM is the high-water mark of the whole
// test process since it started, so any benchmark or test that ran
// before in the same process (e.g. under -bench . or a plain go test
// -bench run that also runs the tests) can set it. For a meaningful
// figure run this benchmark alone, with no tests:
//
//	go test -run '^$' -bench S3Upload1GiB ./sink/
func BenchmarkS3Upload1GiB(b *testing.B) {
	srv := versitygw.Start(b)
	s, err := NewS3(context.Background(), S3Config{
		Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, Credentials: srv.Credentials(),
	})
	if err != nil {
		b.Fatal(err)
	}
	const n = 1 << 30
	noise() // generate the 16 MiB noise block before measuring
	b.SetBytes(n)
	var peak int64
	for b.Loop() {
		res, err := s.Put(context.Background(), "bench/upload.bin.zst", newNoise(n), Meta{ContentType: "application/octet-stream"})
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, res.PeakBuffered)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-buffered-MiB")
	b.ReportMetric(float64(s.partSize)/(1<<20), "part-MiB")
	b.ReportMetric(float64(s.concurrency), "concurrency")
	if hwm, ok := vmHWM(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
}

// BenchmarkS3UploadPaged1GiB is BenchmarkS3Upload1GiB for one object of
// 64 pages of 16 MiB (Create, WritePage, Commit): the pages share the part
// buffers, so the figures must match the one-page upload's.
//
//	go test -run '^$' -bench S3UploadPaged1GiB ./sink/
func BenchmarkS3UploadPaged1GiB(b *testing.B) {
	srv := versitygw.Start(b)
	s, err := NewS3(context.Background(), S3Config{
		Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, Credentials: srv.Credentials(),
	})
	if err != nil {
		b.Fatal(err)
	}
	const pages, pageSize = 64, 16 << 20
	noise()
	b.SetBytes(pages * pageSize)
	var peak int64
	for b.Loop() {
		w, err := s.Create(context.Background(), "bench/paged.bin.zst")
		if err != nil {
			b.Fatal(err)
		}
		for range pages {
			if _, err := w.WritePage(newNoise(pageSize)); err != nil {
				b.Fatal(err)
			}
		}
		res, err := w.Commit(Meta{ContentType: "application/octet-stream"})
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, res.PeakBuffered)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-buffered-MiB")
	if hwm, ok := vmHWM(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
}

// vmHWM reads the process's peak resident set size from /proc (Linux).
func vmHWM() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// cpuClock measures the process's CPU time (user + system) over a loop.
type cpuClock struct{ start time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{start: cpuTime()} }

// report adds cpu-MB/s: bytes processed per second of CPU time.
func (c cpuClock) report(b *testing.B, bytesPerOp int) {
	if spent := cpuTime() - c.start; spent > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/spent.Seconds(), "cpu-MB/s")
	}
}
