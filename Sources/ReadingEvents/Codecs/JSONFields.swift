import Foundation

/// A JSON object key of any name.
struct JSONKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

/// Reads the fields of one JSON object through `Decodable`, turning every failure into an
/// ``EventDecodingError`` that names the field by its dotted path (`data.metadata.isbn13`) and says
/// what was expected. The value rules are those of `DecodingChecks`, shared with the binary codec.
struct JSONFields {
    let container: KeyedDecodingContainer<JSONKey>
    /// The path of this object followed by a dot, or "" at the top level.
    let prefix: String

    init(_ decoder: any Decoder, prefix: String = "") throws(EventDecodingError) {
        do {
            container = try decoder.container(keyedBy: JSONKey.self)
        } catch {
            let field = prefix.isEmpty ? "line" : String(prefix.dropLast())
            throw EventDecodingError(field: field, problem: prefix.isEmpty ? .malformed : .wrongType,
                                     detail: "expected a JSON object")
        }
        self.prefix = prefix
    }

    private init(container: KeyedDecodingContainer<JSONKey>, prefix: String) {
        self.container = container
        self.prefix = prefix
    }

    func path(_ key: String) -> String { prefix + key }

    /// Whether the key is present with a value other than `null`.
    func has(_ key: String) -> Bool {
        let k = JSONKey(key)
        guard container.contains(k) else { return false }
        return (try? container.decodeNil(forKey: k)) == false
    }

    /// Decodes a required value, mapping Foundation's errors to a typed one that says `expected`.
    private func value<T: Decodable>(_ type: T.Type, _ key: String, _ expected: String) throws(EventDecodingError) -> T {
        do {
            return try container.decode(T.self, forKey: JSONKey(key))
        } catch let error as DecodingError {
            switch error {
            case .keyNotFound: throw .missing(path(key))
            case .valueNotFound: throw .missing(path(key), "is null")
            case .typeMismatch, .dataCorrupted:
                throw EventDecodingError(field: path(key), problem: .wrongType, detail: "expected \(expected)")
            @unknown default:
                throw EventDecodingError(field: path(key), problem: .wrongType, detail: "expected \(expected)")
            }
        } catch let error as EventDecodingError {
            throw error
        } catch {
            // Foundation's own parse errors, e.g. `4.5` for an integer.
            throw EventDecodingError(field: path(key), problem: .wrongType, detail: "expected \(expected)")
        }
    }

    private func optional<T: Decodable>(_ type: T.Type, _ key: String, _ expected: String) throws(EventDecodingError) -> T? {
        has(key) ? try value(type, key, expected) : nil
    }

    func int64(_ key: String) throws(EventDecodingError) -> Int64 { try value(Int64.self, key, "an integer") }
    func optionalInt64(_ key: String) throws(EventDecodingError) -> Int64? { try optional(Int64.self, key, "an integer") }
    func uint64(_ key: String) throws(EventDecodingError) -> UInt64 { try value(UInt64.self, key, "a non-negative integer") }
    func double(_ key: String) throws(EventDecodingError) -> Double { try value(Double.self, key, "a number") }
    func optionalDouble(_ key: String) throws(EventDecodingError) -> Double? { try optional(Double.self, key, "a number") }
    func string(_ key: String) throws(EventDecodingError) -> String { try value(String.self, key, "a string") }
    func optionalString(_ key: String) throws(EventDecodingError) -> String? { try optional(String.self, key, "a string") }

    func id<Tag>(_ key: String) throws(EventDecodingError) -> TaggedID<Tag> {
        let text = try value(String.self, key, "a UUID string")
        guard let id = TaggedID<Tag>(uuidString: text) else {
            throw .invalid(path(key), .malformed, "\"\(text)\" is not a UUID")
        }
        return id
    }

    func optionalID<Tag>(_ key: String) throws(EventDecodingError) -> TaggedID<Tag>? {
        has(key) ? try id(key) : nil
    }

    func ids<Tag>(_ key: String) throws(EventDecodingError) -> [TaggedID<Tag>] {
        let texts = try value([String].self, key, "an array of UUID strings")
        var ids: [TaggedID<Tag>] = []
        ids.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            guard let id = TaggedID<Tag>(uuidString: text) else {
                throw .invalid(path(key) + "[\(index)]", .malformed, "\"\(text)\" is not a UUID")
            }
            ids.append(id)
        }
        return ids
    }

    /// An ISO 8601 instant in 1900 ..< 2200.
    func instant(_ key: String) throws(EventDecodingError) -> Timestamp {
        let text = try value(String.self, key, "an ISO 8601 instant string")
        guard let instant = Timestamp(iso8601: text) else {
            throw .invalid(path(key), .malformed, "\"\(text)\" is not an ISO 8601 instant")
        }
        return try DecodingChecks.instant(instant.microseconds, path(key))
    }

    /// A `YYYY-MM-DD` date.
    func date(_ key: String) throws(EventDecodingError) -> LocalDate {
        let text = try value(String.self, key, "a YYYY-MM-DD date string")
        do { return try LocalDate(iso: text, field: path(key)) } catch { throw EventDecodingError(error, under: "") }
    }

    func optionalDate(_ key: String) throws(EventDecodingError) -> LocalDate? {
        has(key) ? try date(key) : nil
    }

    func page(_ key: String) throws(EventDecodingError) -> Int { try DecodingChecks.page(int64(key), path(key)) }

    func optionalPage(_ key: String) throws(EventDecodingError) -> Int? {
        has(key) ? try page(key) : nil
    }

    func text(_ key: String, limit: Int) throws(EventDecodingError) -> String {
        try DecodingChecks.text(string(key), limit: limit, path(key))
    }

    func theme(_ key: String) throws(EventDecodingError) -> Theme? {
        try DecodingChecks.theme(optionalString(key), path(key))
    }

    func status(_ key: String) throws(EventDecodingError) -> ReadingStatus {
        let text = try string(key)
        guard let status = ReadingStatus(rawValue: text) else {
            throw .invalid(path(key), .malformed,
                           "\"\(text)\" is not one of \(ReadingStatus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return status
    }

    /// A nested object, whose fields are named under `key.`.
    func object(_ key: String) throws(EventDecodingError) -> JSONFields {
        guard container.contains(JSONKey(key)) else { throw .missing(path(key)) }
        guard has(key) else { throw .missing(path(key), "is null") }
        do {
            return JSONFields(container: try container.nestedContainer(keyedBy: JSONKey.self, forKey: JSONKey(key)),
                              prefix: path(key) + ".")
        } catch {
            throw EventDecodingError(field: path(key), problem: .wrongType, detail: "expected a JSON object")
        }
    }
}
