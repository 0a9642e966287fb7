import Foundation

/// Finds a key that appears twice in one object of a JSON text, without decoding the values.
///
/// `Sendable`: a namespace.
enum JSONKeys {
    private struct Container {
        /// The keys seen (an object), or nil (an array).
        var keys: Set<String>?
        /// The container's path (`events[3].record`).
        var path: String
        /// An object's last key, an array's current index.
        var lastKey = ""
        var index = 0
    }

    /// The path of the first repeated key (`events[2].record`), or nil when none repeats or the
    /// text is not JSON (the decoder reports that).
    static func firstDuplicate(in bytes: [UInt8]) -> String? {
        var stack: [Container] = []
        var expectKey = false
        var i = 0
        let n = bytes.count
        func childPath() -> String {
            guard let top = stack.last else { return "" }
            if top.keys == nil { return top.path + "[\(top.index)]" }
            return top.path.isEmpty ? top.lastKey : top.path + "." + top.lastKey
        }
        // The string starting at `i` (a quote); moves `i` past it.
        func readString() -> String? {
            var j = i + 1
            var escaped = false
            while j < n {
                let byte = bytes[j]
                if byte == 0x5C { escaped = true; j += 2; continue }
                if byte == 0x22 { break }
                j += 1
            }
            guard j < n else { return nil }
            let raw = bytes[(i + 1)..<j]
            i = j + 1
            if !escaped { return String(decoding: raw, as: UTF8.self) }
            return (try? JSONSerialization.jsonObject(with: Data([0x22] + raw + [0x22]), options: .fragmentsAllowed)) as? String
        }
        while i < n {
            switch bytes[i] {
            case 0x7B: // {
                let path = childPath()
                stack.append(Container(keys: [], path: path))
                expectKey = true
                i += 1
            case 0x5B: // [
                let path = childPath()
                stack.append(Container(keys: nil, path: path))
                expectKey = false
                i += 1
            case 0x7D, 0x5D: // } ]
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
                expectKey = false
                i += 1
            case 0x22: // "
                if expectKey, stack.last?.keys != nil {
                    guard let key = readString() else { return nil }
                    let top = stack.count - 1
                    if stack[top].keys!.contains(key) { return stack[top].path.isEmpty ? key : stack[top].path + "." + key }
                    stack[top].keys!.insert(key)
                    stack[top].lastKey = key
                    expectKey = false
                } else {
                    guard readString() != nil else { return nil }
                }
            case 0x2C: // ,
                if let top = stack.indices.last {
                    if stack[top].keys == nil { stack[top].index += 1 } else { expectKey = true }
                }
                i += 1
            default:
                i += 1
            }
        }
        return nil
    }
}
