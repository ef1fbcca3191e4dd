package config

// The Kafka clients' keys: how every client connects (security.protocol,
// ssl.*, sasl.*), and the producer's and consumers' settings a Kafka
// Streams application carries. engine/kafka and engine/kafka/conn read
// them; each key's Clients say which clients' prefixes may carry it.

var (
	allClients     = []Client{Consumer, Producer, Admin}
	consumerOnly   = []Client{Consumer}
	producerOnly   = []Client{Producer}
	kafkaReaders   = []Component{KafkaClient}
	storeTypes     = []string{"JKS", "PKCS12", "PEM"}
	saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM", "GSSAPI"}
)

// Consumer keys stoatctl's readers already had; they take prefixes too.
var prefixedElsewhere = map[string][]Client{
	keyAutoOffsetReset:      consumerOnly,
	keySessionTimeoutMs:     consumerOnly,
	keyHeartbeatIntervalMs:  consumerOnly,
	keyGroupInstanceID:      consumerOnly,
	keyTransactionTimeoutMs: producerOnly,
	keyBufferMemory:         producerOnly,
}

func init() {
	for i := range catalogue {
		if cs, ok := prefixedElsewhere[catalogue[i].Name]; ok {
			catalogue[i].Clients = cs
		}
	}
}

var clientKeys = []Key{
	{Name: "security.protocol", Type: TypeEnum, Values: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, FoldCase: false, Default: "PLAINTEXT",
		Description: "how clients talk to the brokers: in the clear, over TLS, with SASL authentication, or SASL over TLS", ReadBy: kafkaReaders, Clients: allClients,
		Note: "every command that talks to Kafka reads it (run, migrate, topic, replay record); the embedded broker speaks PLAINTEXT only, on loopback"},
	{Name: "ssl.truststore.location", Type: TypeString, Description: "the file of the CAs that sign the brokers' certificates (JKS, PKCS12 or PEM, as ssl.truststore.type says)",
		ReadBy: kafkaReaders, Clients: allClients, Note: "unset, the system's CAs are trusted"},
	{Name: "ssl.truststore.password", Type: TypeString, Description: "the password of a JKS or PKCS12 truststore", ReadBy: kafkaReaders, Clients: allClients, Secret: true},
	{Name: "ssl.truststore.type", Type: TypeEnum, Values: storeTypes, Default: "JKS", Description: "the format of ssl.truststore.location: JKS, PKCS12 or PEM", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.truststore.certificates", Type: TypeString, Description: "the trusted CAs as PEM certificates, inline (ssl.truststore.type PEM, no location)", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.keystore.location", Type: TypeString, Description: "the file of the client's certificate and key for mutual TLS (JKS, PKCS12 or PEM)", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.keystore.password", Type: TypeString, Description: "the password of a JKS or PKCS12 keystore", ReadBy: kafkaReaders, Clients: allClients, Secret: true},
	{Name: "ssl.keystore.type", Type: TypeEnum, Values: storeTypes, Default: "JKS", Description: "the format of ssl.keystore.location: JKS, PKCS12 or PEM", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.key.password", Type: TypeString, Description: "the password of the private key in the keystore (JKS, or an encrypted PEM key), when it differs from the keystore's",
		ReadBy: kafkaReaders, Clients: allClients, Secret: true, Note: "an encrypted PEM key (ENCRYPTED PRIVATE KEY) is refused: give it unencrypted, or use a PKCS12 keystore"},
	{Name: "ssl.keystore.certificate.chain", Type: TypeString, Description: "the client's certificate chain as PEM, inline (ssl.keystore.type PEM, no location)", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.keystore.key", Type: TypeString, Description: "the client's private key as PEM, inline (ssl.keystore.type PEM, no location)", ReadBy: kafkaReaders, Clients: allClients, Secret: true},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https",
		Description: "https checks that a broker's certificate names the host connected to; empty turns that check off (the chain is still verified)", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3", Description: "the TLS versions a client may speak: TLSv1.2, TLSv1.3", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "ssl.protocol", Type: TypeEnum, Values: []string{"TLSv1.3", "TLSv1.2", "TLS"}, Default: "TLSv1.3", Description: "Java's SSLContext protocol; accepted and ignored", ReadBy: kafkaReaders, Clients: allClients,
		NoOp: true, Note: "Go negotiates the highest version ssl.enabled.protocols allows"},
	{Name: "ssl.cipher.suites", Type: TypeList, Description: "the TLS 1.2 cipher suites a client offers, by their IANA names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...); unset, Go's secure defaults",
		ReadBy: kafkaReaders, Clients: allClients, Note: "TLS 1.3's suites are not configurable; a suite Go does not offer (an insecure one) is refused"},
	{Name: "sasl.mechanism", Type: TypeEnum, Values: saslMechanisms, Default: "GSSAPI",
		Description: "the SASL mechanism under SASL_PLAINTEXT and SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", ReadBy: kafkaReaders, Clients: allClients,
		Note: "GSSAPI (Kerberos), Kafka's default, is refused: set the mechanism explicitly; AWS_MSK_IAM signs with the credentials of AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"},
	{Name: "sasl.jaas.config", Type: TypeString, Description: "the login module and its options in Kafka's JAAS syntax: username and password (PLAIN, SCRAM), clientId, clientSecret and scope (OAUTHBEARER)",
		ReadBy: kafkaReaders, Clients: allClients, Secret: true,
		Note: "PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule and IAMLoginModule are read; the option names of the login module must match the mechanism"},
	{Name: "sasl.oauthbearer.token.endpoint.url", Type: TypeString, Description: "the OAuth 2 token endpoint OAUTHBEARER gets its tokens from (client credentials grant), refreshing each before it expires",
		ReadBy: kafkaReaders, Clients: allClients},
	{Name: "sasl.oauthbearer.scope", Type: TypeString, Description: "the scope OAUTHBEARER asks the token endpoint for (or the JAAS option scope)", ReadBy: kafkaReaders, Clients: allClients},
	{Name: "sasl.oauthbearer.client.credentials.client.id", Type: TypeString, Description: "the OAuth client id OAUTHBEARER authenticates to the token endpoint with (or the JAAS option clientId)",
		ReadBy: kafkaReaders, Clients: allClients},
	{Name: "sasl.oauthbearer.client.credentials.client.secret", Type: TypeString, Description: "the OAuth client secret (or the JAAS option clientSecret)",
		ReadBy: kafkaReaders, Clients: allClients, Secret: true},
	{Name: "sasl.login.callback.handler.class", Type: TypeString, Description: "Java's login callback handler; accepted for Kafka's OAuthBearerLoginCallbackHandler, which stoatctl's OAUTHBEARER does itself",
		ReadBy: kafkaReaders, Clients: allClients, Note: "any other class is refused"},
	{Name: "sasl.client.callback.handler.class", Type: TypeString, Description: "Java's SASL client callback handler; accepted for AWS MSK's IAMClientCallbackHandler, whose signing stoatctl's AWS_MSK_IAM does itself",
		ReadBy: kafkaReaders, Clients: allClients, Note: "any other class is refused"},
	{Name: "client.dns.lookup", Type: TypeEnum, Values: []string{"use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"}, Default: "use_all_dns_ips",
		Description: "how a broker's name is resolved; accepted and ignored", ReadBy: kafkaReaders, Clients: allClients, NoOp: true,
		Note: "franz-go tries every address a name resolves to, which is use_all_dns_ips"},
	{Name: ConfigProviders, Type: TypeList, Default: "file, env, dir",
		Description: "Kafka's config providers: ${NAME:PATH:KEY} in any value is resolved when the configuration is loaded", ReadBy: []Component{Core},
		Note: "config.providers.NAME.class gives a provider's class: FileConfigProvider (a properties file's key), EnvVarConfigProvider (an environment variable) or DirectoryConfigProvider (a file's content), under org.apache.kafka.common.config.provider"},

	{Name: "compression.type", Type: TypeEnum, Values: []string{"none", "gzip", "snappy", "lz4", "zstd"}, Default: "none",
		Description: "how the producer compresses record batches: none (Kafka Streams' default), gzip, snappy, lz4 or zstd", ReadBy: kafkaReaders, Clients: producerOnly},
	atLeast(Key{Name: "max.request.size", Type: TypeInt, Default: "1048576",
		Description: "the largest record batch, and so the largest record, the producer sends; raise it with the topic's max.message.bytes for large records", ReadBy: kafkaReaders, Clients: producerOnly,
		Note: "franz-go's ProducerBatchMaxBytes; a record over it, or over its topic's max.message.bytes, goes to default.production.exception.handler"}, 1024),
	{Name: "acks", Type: TypeEnum, Values: []string{"all", "-1", "1", "0"}, Default: "all",
		Description: "how many replicas acknowledge a write: all (-1), the leader (1) or none (0); under exactly_once_v2 only all", ReadBy: kafkaReaders, Clients: producerOnly,
		Note: "1 and 0 turn idempotent writes off, as Kafka's producer requires"},
	{Name: "enable.idempotence", Type: TypeBool, Default: "true", Description: "whether the producer writes idempotently; false only under at_least_once", ReadBy: kafkaReaders, Clients: producerOnly},
	atLeast(Key{Name: "linger.ms", Type: TypeDurationMs, Default: "10", Description: "how long a partition's batch waits for more records before it is sent", ReadBy: kafkaReaders, Clients: producerOnly,
		Note: "Kafka Streams' producer default is 100; stoatctl's 10 (a transaction's end flushes without waiting)"}, 0),
	{Name: "batch.size", Type: TypeInt, Description: "Kafka's per-partition batch target; accepted and ignored", ReadBy: kafkaReaders, Clients: producerOnly, NoOp: true,
		Note: "franz-go fills a batch up to max.request.size while linger.ms holds it; set those instead"},
	{Name: "max.poll.records", Type: TypeInt, Description: "Kafka's cap on records per poll; accepted and ignored", ReadBy: kafkaReaders, Clients: consumerOnly, NoOp: true,
		Note: "the engine takes what a fetch brings, bounded by fetch.max.bytes, and holds lanes back with stoatflow.lane.queue-size"},
	atLeast(Key{Name: "fetch.max.bytes", NotRestoreOrGlobal: true, Type: TypeInt, Default: "52428800", Description: "the most bytes a consumer's fetch asks a broker for", ReadBy: kafkaReaders, Clients: consumerOnly}, 1),
	atLeast(Key{Name: "max.partition.fetch.bytes", NotRestoreOrGlobal: true, Type: TypeInt, Default: "1048576", Description: "the most bytes a consumer's fetch asks for per partition", ReadBy: kafkaReaders, Clients: consumerOnly}, 1),
	atLeast(Key{Name: "fetch.min.bytes", NotRestoreOrGlobal: true, Type: TypeInt, Default: "1", Description: "the least bytes a broker gathers before it answers a fetch", ReadBy: kafkaReaders, Clients: consumerOnly}, 1),
	atLeast(Key{Name: "fetch.max.wait.ms", NotRestoreOrGlobal: true, Type: TypeDurationMs, Default: "200", Description: "how long a broker holds a fetch waiting for fetch.min.bytes", ReadBy: kafkaReaders, Clients: consumerOnly,
		Note: "Kafka's default is 500; stoatctl's 200 keeps barriers prompt on quiet inputs. The fetch keys apply to the main consumer and to the consumers of topic read and replay record; restoration and global tables read with fetches of their own (stoatflow.restore.fetch-max-bytes)"}, 0),
	{Name: "isolation.level", Type: TypeEnum, Values: []string{"read_committed", "read_uncommitted"}, Default: "by processing.guarantee",
		Description: "what consumers read; set by processing.guarantee (read_committed under exactly_once_v2), as Kafka Streams sets it", ReadBy: kafkaReaders, Clients: consumerOnly,
		Note: "a value that contradicts processing.guarantee is refused"},
	{Name: "enable.auto.commit", Type: TypeBool, Default: "false", Description: "whether the consumer commits offsets on its own; only false: the engine commits at barriers", ReadBy: kafkaReaders, Clients: consumerOnly,
		Note: "true is refused, as Kafka Streams overrides it"},
	{Name: "replication.factor", Type: TypeInt, Default: "-1",
		Description: "the replication factor of the internal topics the application creates; -1 takes the broker's default.replication.factor", ReadBy: []Component{LiveEngine},
		Note: "topic.KEY=VALUE sets topic config KEY of every internal topic created (topic.min.insync.replicas=2); the changelogs' own cleanup.policy and retention.ms are kept"},
}
