// Package conn is how a Kafka client connects to the brokers: the
// transport and the authentication Kafka's security keys describe, as
// franz-go options, and what a failure to connect means.
//
// Terms:
//   - The security protocol (security.protocol) is PLAINTEXT, SSL (TLS),
//     SASL_PLAINTEXT (SASL authentication in the clear) or SASL_SSL (SASL
//     over TLS).
//   - A truststore holds the CAs a client trusts to sign the brokers'
//     certificates; a keystore holds the client's own certificate and key,
//     which mutual TLS (a listener with ssl.client.auth=required) asks
//     for. Either is a JKS or PKCS12 file with a password, or PEM (a file,
//     or inline in the configuration). Hostname verification
//     (ssl.endpoint.identification.algorithm=https) checks that a broker's
//     certificate names the host the client connected to.
//   - A mechanism is the SASL exchange: PLAIN and SCRAM-SHA-256/512 with a
//     username and password, OAUTHBEARER with a token from an OAuth 2
//     token endpoint (client credentials, refreshed before it expires), or
//     AWS_MSK_IAM with AWS credentials.
//   - A JAAS configuration (sasl.jaas.config) is how a Java client names
//     its login module and its options: `ModuleClass required key="value"
//     ...;`. ParseJAAS reads it; the credentials the mechanism needs come
//     from its options.
//   - An authentication failure (a wrong password, a CA the client does not
//     trust, an expired certificate) and an authorization failure (a
//     principal without the ACL an operation needs) are fatal: retrying
//     cannot fix them, so Explain turns them into an *Error naming the
//     cause, the resource and the operation, and callers stop at once.
//
// Secrets (passwords, keys, client secrets) never appear in an error of
// this package: errors name the key at fault, not its value.
package conn
