// Package schemaregistry is a small in-memory schema registry that speaks
// the documented subset of Confluent Schema Registry's REST API that Avro
// serializers and deserializers use, for tests where no real registry can
// run.
//
// Terms, as Confluent's: a schema is an Avro schema's JSON; a subject is
// the name schemas are registered under (with TopicNameStrategy,
// <topic>-key or <topic>-value); a version numbers a subject's schemas
// from 1; an id names a schema across all subjects, and the same schema
// registered under two subjects keeps one id. Two schemas are the same
// when their Avro canonical forms are.
//
// Served: GET /schemas/ids/{id}, GET /schemas/ids/{id}/versions,
// GET /subjects, GET|POST /subjects/{subject}/versions,
// GET /subjects/{subject}/versions/{version|latest} (and .../schema),
// POST /subjects/{subject} (look a schema up), DELETE /subjects/{subject},
// GET|PUT /config and /config/{subject}. Registering enforces the
// subject's compatibility level (else the global one, BACKWARD by default,
// as Confluent's): a schema new to the subject that the level refuses is
// answered 409 with error_code 409, and nothing is registered. Errors
// carry Confluent's error codes: 40401 subject not found, 40402 version
// not found, 40403 schema not found, 42201 invalid schema, 409
// incompatible schema, 401 unauthorized. Only Avro is accepted (schemaType
// AVRO or absent), without references.
package schemaregistry
