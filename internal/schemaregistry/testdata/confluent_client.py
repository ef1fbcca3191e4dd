"""Drives a schema registry with Confluent's own Python client
(python3-confluent-kafka's SchemaRegistryClient, AvroSerializer and
AvroDeserializer), for TestConfluentPythonClient.

Usage: confluent_client.py URL USER:PASSWORD OURS_HEX UNKNOWN_HEX
Prints one JSON object: what each call answered, the bytes the
AvroSerializer wrote, and what the AvroDeserializer read from the bytes
stoatctl's serde wrote (OURS_HEX).
"""
import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
})
ORDER_V2 = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
               {"name": "qty", "type": "int", "default": 1}],
})


def code(fn):
    try:
        fn()
    except SchemaRegistryError as e:
        return e.error_code
    return None


def main():
    url, user_info, ours_hex, unknown_hex = sys.argv[1:5]
    out = {}
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": user_info})
    out["unauthorized"] = code(lambda: SchemaRegistryClient({"url": url}).get_subjects())

    # The registry calls, each answered as Confluent's REST API documents.
    sid = client.register_schema("payments-value", Schema(ORDER, "AVRO"))
    out["register_id"] = sid
    out["register_again_id"] = SchemaRegistryClient({"url": url, "basic.auth.user.info": user_info}).register_schema(
        "payments-value", Schema(ORDER, "AVRO"))
    v2 = client.register_schema("payments-value", Schema(ORDER_V2, "AVRO"))
    out["register_v2_id"] = v2
    out["get_schema_fields"] = [f["name"] for f in json.loads(client.get_schema(v2).schema_str)["fields"]]
    looked = client.lookup_schema("payments-value", Schema(ORDER, "AVRO"))
    out["lookup"] = {"id": looked.schema_id, "subject": looked.subject, "version": looked.version}
    out["subjects"] = client.get_subjects()
    out["versions"] = client.get_versions("payments-value")
    latest = client.get_latest_version("payments-value")
    out["latest"] = {"id": latest.schema_id, "version": latest.version}
    out["version_1_id"] = client.get_version("payments-value", 1).schema_id
    client.set_compatibility(level="FULL")
    out["compatibility"] = client.get_compatibility()
    out["unknown_id"] = code(lambda: client.get_schema(9999))
    out["unknown_subject"] = code(lambda: client.get_latest_version("nope-value"))
    out["unknown_version"] = code(lambda: client.get_version("payments-value", 7))
    out["lookup_unregistered"] = code(lambda: client.lookup_schema(
        "payments-value", Schema(json.dumps({"type": "record", "name": "Other", "fields": []}), "AVRO")))
    out["invalid_schema"] = code(lambda: client.register_schema("bad-value", Schema("{\"type\": \"nope\"}", "AVRO")))

    # Records: the serializer registers under orders-value
    # (TopicNameStrategy) and writes the Confluent framing.
    ctx = SerializationContext("orders", MessageField.VALUE)
    ser = AvroSerializer(client, ORDER)
    out["python_bytes"] = ser({"id": 7, "item": "pen"}, ctx).hex()
    de = AvroDeserializer(client)
    out["decoded_ours"] = de(bytes.fromhex(ours_hex), ctx)
    try:
        de(bytes.fromhex(unknown_hex), ctx)
        out["decoded_unknown"] = "no error"
    except Exception as e:  # the deserializer wraps the registry's error
        out["decoded_unknown"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out, sort_keys=True))


main()
