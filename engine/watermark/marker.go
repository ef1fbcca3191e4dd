package watermark

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MarkerHeader is the header that makes a record of a repartition topic a
// watermark marker rather than data. Its value is the layout version; the
// record's value holds the marks (EncodeMarks). A marker has no key.
const MarkerHeader = "stoatflow-watermark"

// markerV1 is the only layout so far.
const markerV1 byte = 1

// MarkerVersion is the header value of the markers EncodeMarks writes.
var MarkerVersion = []byte{markerV1}

// A Mark is what one upstream task tells the readers of a repartition
// topic at the end of an epoch: every record it wrote before the marker,
// and every final result it will emit, belongs to event time after
// Watermark, which readers may use as the partition's watermark from that
// task. Idle says the task's own inputs are idle, so that it holds
// nothing back.
type Mark struct {
	Task      int32
	Watermark int64
	Idle      bool
}

// markSize is one mark's bytes: task int32, watermark int64, idle byte.
const markSize = 4 + 8 + 1

// EncodeMarks lays marks out as
//
//	count int32 | per mark: task int32 | watermark int64 | idle byte (0 or 1)
//
// big-endian.
func EncodeMarks(marks []Mark) []byte {
	b := make([]byte, 0, 4+markSize*len(marks))
	b = binary.BigEndian.AppendUint32(b, uint32(len(marks)))
	for _, m := range marks {
		b = binary.BigEndian.AppendUint32(b, uint32(m.Task))
		b = binary.BigEndian.AppendUint64(b, uint64(m.Watermark))
		if m.Idle {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// ErrBadMarker is the class of every decoding failure of DecodeMarker.
var ErrBadMarker = errors.New("bad watermark marker")

// DecodeMarker reads a marker record's header value and value. It refuses
// a version it does not know (a newer build's marker), a count the bytes
// cannot hold, a negative task, an idle byte other than 0 or 1, and bytes
// after the last mark.
func DecodeMarker(version, value []byte) ([]Mark, error) {
	if len(version) != 1 || version[0] != markerV1 {
		return nil, fmt.Errorf("%w: version %x is not supported (want %x)", ErrBadMarker, version, markerV1)
	}
	if len(value) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, want at least 4 for the count", ErrBadMarker, len(value))
	}
	n := binary.BigEndian.Uint32(value)
	rest := value[4:]
	if uint64(n)*markSize != uint64(len(rest)) {
		return nil, fmt.Errorf("%w: %d marks do not fill the %d bytes after the count", ErrBadMarker, n, len(rest))
	}
	marks := make([]Mark, n)
	for i := range marks {
		at := rest[i*markSize:]
		m := Mark{Task: int32(binary.BigEndian.Uint32(at)), Watermark: int64(binary.BigEndian.Uint64(at[4:]))}
		if m.Task < 0 {
			return nil, fmt.Errorf("%w: mark %d: task %d is negative", ErrBadMarker, i, m.Task)
		}
		switch at[12] {
		case 0:
		case 1:
			m.Idle = true
		default:
			return nil, fmt.Errorf("%w: mark %d: idle byte %d is neither 0 nor 1", ErrBadMarker, i, at[12])
		}
		marks[i] = m
	}
	return marks, nil
}
