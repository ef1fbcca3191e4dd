package dev.stoatflow.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.kstream.Windowed;

/**
 * JSON Lines records in and out.
 *
 * <p>In: one object a line, {@code {"topic": "lines", "key": "alice",
 * "value": "the cat", "timestamp": 1714557600000}}; key and value are
 * strings, or null when JSON null or missing; blank lines are skipped.
 *
 * <p>Out: {@code {"topic":..,"key":..,"value":..,"timestamp":..}} with
 * Strings as JSON strings, Longs as JSON numbers, windowed keys as
 * {@code {"key":..,"start":..,"end":..}}.
 */
final class JsonLines {
    private JsonLines() {}

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Set<String> FIELDS = Set.of("topic", "key", "value", "timestamp");

    /** One input record, with where it came from for error messages. */
    record Input(String topic, String key, String value, long timestamp, String where) {}

    /** A malformed input file; the message names the file and line. */
    static final class BadInput extends Exception {
        BadInput(String message) {
            super(message);
        }
    }

    /** Reads every record of the file, in file order. */
    static List<Input> read(Path file) throws IOException, BadInput {
        List<Input> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                if (line.isBlank()) {
                    continue;
                }
                out.add(parse(line, file + ":" + n));
            }
        }
        return out;
    }

    private static Input parse(String line, String where) throws BadInput {
        JsonNode node;
        try {
            node = MAPPER.readTree(line);
        } catch (JsonProcessingException e) {
            throw new BadInput(where + ": not JSON: " + e.getOriginalMessage());
        }
        if (!node.isObject()) {
            throw new BadInput(where + ": not a JSON object");
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!FIELDS.contains(f)) {
                throw new BadInput(where + ": unknown field \"" + f + "\" (want topic, key, value, timestamp)");
            }
        }
        JsonNode topic = node.get("topic");
        if (topic == null || !topic.isTextual() || topic.asText().isEmpty()) {
            throw new BadInput(where + ": \"topic\" must be a non-empty string");
        }
        JsonNode ts = node.get("timestamp");
        if (ts == null || !ts.isIntegralNumber() || !ts.canConvertToLong() || ts.asLong() < 0) {
            throw new BadInput(where + ": \"timestamp\" must be a non-negative integer (epoch milliseconds)");
        }
        return new Input(topic.asText(), text(node, "key", where), text(node, "value", where), ts.asLong(), where);
    }

    /** A string field; missing and JSON null are both null. */
    private static String text(JsonNode node, String field, String where) throws BadInput {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new BadInput(where + ": \"" + field + "\" must be a string or null (sources use String serdes)");
        }
        return v.asText();
    }

    /** One output line, without the newline. */
    static String output(String topic, Object key, Object value, long timestamp) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("topic", topic);
        o.set("key", toJson(key));
        o.set("value", toJson(value));
        o.put("timestamp", timestamp);
        try {
            return MAPPER.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e); // cannot happen for a tree of plain nodes
        }
    }

    private static JsonNode toJson(Object v) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (v == null) {
            return f.nullNode();
        } else if (v instanceof String s) {
            return f.textNode(s);
        } else if (v instanceof Long l) {
            return f.numberNode(l);
        } else if (v instanceof Windowed<?> w) {
            ObjectNode o = f.objectNode();
            o.set("key", toJson(w.key()));
            o.put("start", w.window().start());
            o.put("end", w.window().end());
            return o;
        }
        throw new IllegalArgumentException("no JSON form for " + v.getClass().getName());
    }
}
