package sqlstore

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"

	"svc/internal/platform/bufpool"
)

// Events compressed by the service (migration 0020): a pending row's and a
// trajectory's events are kept in events_z as one Snappy block of their
// JSON bytes (the format of github.com/google/snappy's
// format_description.txt, which any Snappy library decodes). PostgreSQL
// took the uncompressed JSON by copying it twice and lexing it, which
// cost more than the service spends compressing; the JSON is checked by
// the service before. Snappy rather than zstd: on an export's events it
// compresses at 1.4 GB/s against zstd's fastest 0.55 GB/s here, for 5.6
// times smaller against 9 (docs/decisions.md).

// maxEventsBytes bounds a decompressed events value: far above any
// trajectory the service writes, so that a damaged value cannot make a
// reader allocate without bound.
const maxEventsBytes = 1 << 30

// scratch holds the buffers a value is compressed into before it is
// copied out at its size.
var scratch = bufpool.Pool{Max: 64 << 20}

// compressEvents is events as events_z keeps them.
func compressEvents(events []byte) []byte {
	need := s2.MaxEncodedLen(len(events))
	buf := scratch.Get(need)
	z := s2.EncodeSnappy((*buf)[:need], events)
	out := append([]byte(nil), z...)
	scratch.Put(buf, *buf)
	return out
}

// eventsOf is a row's events: events as read, or events_z decompressed
// when it is set.
func eventsOf(events, eventsZ []byte) ([]byte, error) {
	if eventsZ == nil {
		return events, nil
	}
	n, err := s2.DecodedLen(eventsZ)
	if err == nil && n > maxEventsBytes {
		err = errors.New("longer than the service writes")
	}
	var out []byte
	if err == nil {
		out, err = s2.Decode(make([]byte, n), eventsZ)
	}
	if err != nil {
		return nil, fmt.Errorf("decompressing stored events: %w", err)
	}
	return out, nil
}
