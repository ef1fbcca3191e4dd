// Package faultproxy is a TCP proxy for tests that puts network faults
// between a Kafka client and its brokers: connections cut, bytes delayed,
// a broker that accepts connections and never answers (a black hole), and
// connections refused.
//
// Kafka clients connect to the addresses brokers advertise, not only to
// their seeds, so a proxy in front of the seed alone would be bypassed
// after the first metadata answer. A Proxy therefore forwards to whatever
// address the client asked for: the client dials through Proxy.Dial (a
// franz-go kgo.Dialer), which connects to the proxy's listener and names
// the wanted address in a one-line preamble the proxy reads first.
package faultproxy
