// Package inspect is the client side of a running engine's REST API: the
// wire types of its documents (the same structs the server encodes, so the
// two cannot drift), an HTTP client that fetches them, and the formatters
// that print them for people (tables) and for scripts (JSON, YAML).
//
// Terms:
//   - global watermark: the minimum over every registered, non-idle input
//     partition's watermark; what windows are judged against. MinWatermark
//     (the minimum int64) before the first one, which the documents'
//     JSON writes as null (json.go): no number past 2^53.
//   - pinning partition: the partition whose watermark (or preview
//     watermark, where it shows one) equals the global watermark; the one
//     every window is waiting for.
//   - preview watermark: the watermark a partition would have if its next,
//     future-stamped record were processed; it counts toward the global
//     watermark while that record waits behind older ones.
//
// `stoatctl inspect` and `stoatctl watch` are thin commands over this
// package.
package inspect
