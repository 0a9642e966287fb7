import Foundation
import Testing

/// Runs the built `replay` (a product of the root package, built beside these tests) with
/// `arguments`; returns its standard output, throws ``CommandError`` on a non-zero exit.
@discardableResult
func replay(_ arguments: [String]) throws -> String {
    guard let binary = builtExecutable(named: "replay") else {
        throw CommandError(command: ["replay"] + arguments, status: -1,
                           output: "the replay binary was not found beside the test binary (swift build --package-path Server --build-tests builds it)")
    }
    return try runCommand([binary.path] + arguments)
}

@Suite("A new device joins from the CLI: `replay sync run --server` creates its store", needsPostgres)
struct JoinCLITests {
    /// The line `token T` that `replay sync register` prints.
    static func token(_ output: String) throws -> String {
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("token ") }, "no token in: \(output)")
        return String(line.dropFirst("token ".count))
    }

    /// `replay verify --json`'s view digest and `replay show --json` of the store at `path`.
    static func views(_ path: String) throws -> (digest: String, lastPosition: Int, dashboard: String) {
        let verify = try #require(JSONSerialization.jsonObject(with: Data(try replay(["verify", "--store", path, "--json"]).utf8))
                                  as? [String: Any])
        #expect(verify["ok"] as? Bool == true, "\(path): \(verify)")
        return (try #require(verify["viewDigest"] as? String), try #require(verify["lastPosition"] as? Int),
                try replay(["show", "--store", path, "--json"]))
    }

    /// The two-device set-up as the docs give it: the first device (a demo history) registers and
    /// syncs; a second device registers with the first one's token, and its first
    /// `replay sync run --server` into a directory that does not exist creates the store and pulls
    /// the reader's history; a third does the same into an empty directory. All three end with
    /// the same events and views. Before, the second device's sync said "no store at DIR (create
    /// one with `replay demo` or `replay import`)".
    @Test func aSecondDeviceJoinsWithOneCommandIntoANewOrEmptyDirectory() throws {
        let fixture = try Fixture()
        let root = try makeTemporaryDirectory("join")
        defer { try? FileManager.default.removeItem(at: root) }
        let (phone, tablet, laptop) = (root.appendingPathComponent("phone").path, root.appendingPathComponent("tablet").path,
                                       root.appendingPathComponent("laptop").path)
        try replay(["demo", "--store", phone, "--readers", "1", "--days", "40", "--quiet"])
        let dashboard = try #require(JSONSerialization.jsonObject(with: Data(try replay(["show", "--store", phone, "--json"]).utf8))
                                     as? [[String: Any]])
        let reader = try #require(dashboard.first?["reader"] as? String)
        let phoneToken = try Self.token(try replay(["sync", "register", "--server", fixture.baseURL, "--reader", reader, "--name", "phone"]))
        try replay(["sync", "run", "--store", phone, "--server", fixture.baseURL, "--token", phoneToken])

        let tabletToken = try Self.token(try replay(["sync", "register", "--server", fixture.baseURL, "--reader", reader,
                                                     "--name", "tablet", "--token", phoneToken]))
        #expect(!FileManager.default.fileExists(atPath: tablet))
        let joined = try replay(["sync", "run", "--store", tablet, "--server", fixture.baseURL, "--token", tabletToken])
        #expect(joined.contains("created a new store"), "\(joined)")
        let laptopToken = try Self.token(try replay(["sync", "register", "--server", fixture.baseURL, "--reader", reader,
                                                     "--name", "laptop", "--token", phoneToken]))
        try FileManager.default.createDirectory(atPath: laptop, withIntermediateDirectories: false)
        try replay(["sync", "run", "--store", laptop, "--server", fixture.baseURL, "--token", laptopToken])

        let expected = try Self.views(phone)
        #expect(expected.lastPosition > 50, "the demo history: \(expected.lastPosition) events")
        for store in [tablet, laptop] {
            let views = try Self.views(store)
            #expect(views.lastPosition == expected.lastPosition, "\(store)")
            #expect(views.digest == expected.digest, "\(store)")
            #expect(views.dashboard == expected.dashboard, "\(store)")
        }
        // The joined store is an ordinary store now: its next sync moves nothing, and creates nothing.
        let again = try replay(["sync", "run", "--store", tablet, "--server", fixture.baseURL, "--token", tabletToken])
        #expect(!again.contains("created a new store"), "\(again)")
        #expect(try Self.views(tablet).digest == expected.digest)
    }

    /// A directory that holds something else is refused, naming it, and left as it was; a sync
    /// that fails (a token the server does not know) leaves a new directory absent and an empty
    /// one empty: only a sync that reaches the server with a valid token keeps the new store.
    @Test func aForeignDirectoryOrAFailedFirstSyncLeavesNothingBehind() throws {
        let fixture = try Fixture()
        let root = try makeTemporaryDirectory("join-refused")
        defer { try? FileManager.default.removeItem(at: root) }
        let reader = UUID().uuidString.lowercased()
        let token = try Self.token(try replay(["sync", "register", "--server", fixture.baseURL, "--reader", reader, "--name", "phone"]))

        let foreign = root.appendingPathComponent("documents")
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: false)
        try Data("not a store".utf8).write(to: foreign.appendingPathComponent("notes.txt"))
        let refused = try #require(throws: CommandError.self) {
            try replay(["sync", "run", "--store", foreign.path, "--server", fixture.baseURL, "--token", token])
        }
        #expect(refused.output.contains(foreign.path) && refused.output.contains("not empty"), "\(refused)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: foreign.path) == ["notes.txt"])

        let missing = root.appendingPathComponent("new").path, empty = root.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        let unknown = "\(reader).\(String(repeating: "A", count: 43))"
        for path in [missing, empty] {
            let failed = try #require(throws: CommandError.self) {
                try replay(["sync", "run", "--store", path, "--server", fixture.baseURL, "--token", unknown])
            }
            #expect(failed.output.contains("401") || failed.output.contains("token"), "\(failed)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a failed first sync leaves no store behind")
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty, "an empty directory stays empty")

        // With the right token the same command joins (the reader has no events yet: an empty store).
        try replay(["sync", "run", "--store", missing, "--server", fixture.baseURL, "--token", token])
        #expect(FileManager.default.fileExists(atPath: missing + "/data.mdb"))
    }
}
