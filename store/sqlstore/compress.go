package sqlstore

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Events compressed by the service (migration 0020, PostgreSQL): a pending
// row's and a trajectory's events are kept in events_z as one zstd frame
// of their JSON bytes. PostgreSQL took the uncompressed JSON by copying it
// twice and lexing it, which cost more than the service spends
// compressing; the JSON is checked by the service before.

// maxEventsBytes bounds a decompressed events value: far above any
// trajectory the service writes, so that a damaged value cannot make a
// reader allocate without bound.
const maxEventsBytes = 1 << 30

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

// zstdCodec is the process's encoder and decoder; EncodeAll and DecodeAll
// may be called from many goroutines at once.
func zstdCodec() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxEventsBytes), zstd.WithDecoderConcurrency(0))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressEvents is events as events_z keeps them.
func compressEvents(events []byte) ([]byte, error) {
	enc, _, err := zstdCodec()
	if err != nil {
		return nil, err
	}
	return enc.EncodeAll(events, make([]byte, 0, len(events)/8+64)), nil
}

// eventsOf is a row's events: events as read, or events_z decompressed
// when it is set.
func eventsOf(events, eventsZ []byte) ([]byte, error) {
	if eventsZ == nil {
		return events, nil
	}
	_, dec, err := zstdCodec()
	if err != nil {
		return nil, err
	}
	out, err := dec.DecodeAll(eventsZ, nil)
	if err != nil {
		return nil, fmt.Errorf("decompressing stored events: %w", err)
	}
	return out, nil
}
