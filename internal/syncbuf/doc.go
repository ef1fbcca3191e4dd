// Package syncbuf is a text buffer that goroutines may write while a test
// reads it: a running engine's or command's log, a client's log.
//
// Terms:
//   - A Buffer is written with Write (an io.Writer for loggers) and read
//     whole with String, each under the buffer's lock.
package syncbuf
