import Foundation

/// Prints `value` as the `--json` output of a command: one JSON document on stdout, keys sorted,
/// pretty-printed, `/` not escaped. Every command's output is a `…Output: Encodable` type printed here.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    FileHandle.standardOutput.write(try encoder.encode(value))
    FileHandle.standardOutput.write(Data("\n".utf8))
}

extension JSONEncoder {
    /// Sorted keys, no whitespace, `/` not escaped: for JSON that is streamed in parts (`show`) or
    /// embedded (reports).
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// An optional output field that is written as `null` when absent, where synthesized `Encodable`
/// would leave the key out: the key is always there for readers of the JSON.
@propertyWrapper
struct NullWhenAbsent<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
