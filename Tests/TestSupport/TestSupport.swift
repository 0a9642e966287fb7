// Helpers shared by the test targets and the store's child-process helper: temporary
// directories, directory snapshots, the deterministic event IDs parent and child agree on, and
// finding an executable built beside the tests. Foundation only, so every test target (and the
// `store-test-helper` executable) can use it.
import Foundation

/// A fresh directory path under the system's temporary directory, removed by ``remove()``.
///
/// `Sendable`: a URL.
package struct TempDirectory: Sendable {
    /// The directory.
    package let url: URL

    /// A new, unique path `<tmp>/<prefix>-<UUID>`; the directory is not created.
    package init(prefix: String) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    }

    /// A new, unique directory `<tmp>/<prefix>-<UUID>`, created.
    package static func created(prefix: String) throws -> TempDirectory {
        let directory = TempDirectory(prefix: prefix)
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        return directory
    }

    /// A path inside the directory (not created).
    package func child(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The file-system path of ``child(_:)``.
    package func path(_ name: String) -> String { child(name).path }

    /// Removes the directory and everything in it (errors ignored: it may not exist). With
    /// `KEEP_TEST_STORES` set to a directory, moves it there instead: the stores the tests leave
    /// are then the scenario stores `Scripts/compare-scenario-outputs.sh` reads with two builds.
    package func remove() {
        if let keep = ProcessInfo.processInfo.environment["KEEP_TEST_STORES"], !keep.isEmpty,
           FileManager.default.fileExists(atPath: url.path) {
            let target = URL(fileURLWithPath: keep).appendingPathComponent(url.lastPathComponent)
            if (try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)) != nil,
               (try? FileManager.default.moveItem(at: url, to: target)) != nil {
                return
            }
        }
        try? FileManager.default.removeItem(at: url)
    }
}

/// Every file of a directory (recursively; subdirectories as `name/` with no bytes) with its
/// bytes, for "modified nothing" checks.
package func snapshot(of directory: URL) throws -> [String: Data] {
    var result: [String: Data] = [:]
    guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return result }
    while let name = enumerator.nextObject() as? String {
        let url = directory.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            result[name] = try Data(contentsOf: url)
        } else {
            result[name + "/"] = Data()
        }
    }
    return result
}

/// A UUID derived from `prefix` and `index` (FNV-1a of the prefix, then the index): the child
/// helper and the tests derive the same IDs, so the parent knows which events a child appended.
package func deterministicID(prefix: String, index: Int) -> UUID {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in prefix.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    var bytes = [UInt8](repeating: 0, count: 16)
    for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: hash >> (8 * UInt64(i))) }
    for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: UInt64(index) >> (8 * UInt64(i))) }
    return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                       bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
}

/// The executable `name` built in the same products directory as the running test binary (the
/// test target depends on it), and the directories searched; `url` is nil when it is not there.
package func builtExecutable(named name: String) -> (url: URL?, searched: [String]) {
    var candidates: [URL] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    if let main = Bundle.main.executableURL { candidates.append(main.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    for directory in candidates {
        // The test binary may live inside an .xctest bundle: look up a few levels.
        var current = directory
        for _ in 0..<4 {
            let candidate = current.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
               FileManager.default.isExecutableFile(atPath: candidate.path) {
                return (candidate, candidates.map(\.path))
            }
            current = current.deletingLastPathComponent()
        }
    }
    return (nil, candidates.map(\.path))
}
