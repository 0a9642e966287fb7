import Foundation

/// Finds a key written twice in one JSON object of a line.
///
/// Foundation's decoder keeps one of two equal keys silently, so `{"type":"PagesRead",
/// "type":"BookLiked"}` would import as whichever it kept. ``JSONEventCodec/decode(_:)-(some Collection<UInt8>)``
/// refuses such a line instead, naming the key path. Keys are compared after their escapes are
/// decoded (`"t"` and `"\u0074"` are one key).
///
/// `Sendable`: an uninhabited namespace.
enum JSONDuplicateKeys {
    /// One open object or array: an object's keys so far, its current key, and whether the next
    /// string is a key.
    private struct Frame { var isObject: Bool; var keys: Set<String> = []; var key: String?; var expectsKey: Bool }

    /// The path of the first key that appears twice in one object (`type`, `data.metadata.title`),
    /// or `nil`. Input that is not JSON gives `nil` or a path; the decoder reports it.
    static func first(in bytes: some Collection<UInt8>) -> String? {
        let bytes = Array(bytes)
        var stack: [Frame] = []
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"): stack.append(Frame(isObject: true, expectsKey: true))
            case UInt8(ascii: "["): stack.append(Frame(isObject: false, expectsKey: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if !stack.isEmpty { stack.removeLast() }
            case UInt8(ascii: ","): if let last = stack.indices.last, stack[last].isObject { stack[last].expectsKey = true }
            case UInt8(ascii: "\""):
                let start = i
                i += 1
                var escaped = false
                while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                    if bytes[i] == UInt8(ascii: "\\") { escaped = true; i += 1 }
                    i += 1
                }
                guard i < bytes.count else { return nil }
                if let last = stack.indices.last, stack[last].isObject, stack[last].expectsKey {
                    let raw = bytes[start...i]
                    let key = escaped ? (try? JSONDecoder().decode(String.self, from: Data(raw))) ?? ""
                                      : String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
                    stack[last].expectsKey = false
                    stack[last].key = key
                    guard stack[last].keys.insert(key).inserted else {
                        return stack.compactMap { $0.isObject ? $0.key : nil }.joined(separator: ".")
                    }
                }
            default: break
            }
            i += 1
        }
        return nil
    }
}
