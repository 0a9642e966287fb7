import Foundation
import TestSupport
import Testing

/// The command tree of `replay` (one file per command, nested `sync` and `partner`) and its typed
/// arguments, with the built binary.
@Suite("replay command tree and typed arguments")
struct CommandTreeCLITests {
    /// Every command path of the built binary ("sync vector"), walked recursively from
    /// `--experimental-dump-help` (ArgumentParser's description of the configuration).
    static func commandPaths() throws -> [[String]] {
        let run = try replayOK(["--experimental-dump-help"])
        let root = try #require(try run.jsonObject()["command"] as? [String: Any])
        var paths: [[String]] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard let name = sub["commandName"] as? String, name != "help" else { continue }
                paths.append(path + [name])
                walk(sub, path + [name])
            }
        }
        walk(root, [])
        return paths
    }

    @Test("--help of every command and subcommand exits 0 and says what it does and how to call it")
    func helpOfEveryCommand() throws {
        let paths = try Self.commandPaths()
        #expect(paths.count >= 20, "\(paths)")
        for path in [[]] + paths {
            let run = try replay(path + ["--help"])
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("OVERVIEW: "), "\(run)")
            #expect(run.stdout.contains("USAGE: " + (["replay"] + path).joined(separator: " ")), "\(run)")
        }
    }

    /// The tree in `docs/cli.md` (which the README links) is the binary's: no command missing,
    /// none listed that does not exist; `sync` and `partner` are groups of subcommands.
    @Test func docsListEveryCommand() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/cli.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let listed = Set(text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `replay ") else { return nil }
            return String(line.dropFirst("| `replay ".count).prefix { $0 != "`" })
        })
        let paths = Set(try Self.commandPaths().map { $0.joined(separator: " ") })
        #expect(listed == paths, "only in docs: \(listed.subtracting(paths)); only in the binary: \(paths.subtracting(listed))")
        for nested in ["sync run", "sync vector", "sync quarantine", "sync retry-quarantine", "sync register",
                       "partner invite", "partner accept", "partner end", "partner list"] {
            #expect(paths.contains(nested), "\(nested)")
        }
    }

    /// `replay sync` without a subcommand is `sync run`: today's `replay sync --with DIR` works.
    @Test func syncRunIsTheDefault() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a"), b = temp.path("b")
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "5", "--quiet"])
        let plain = try replayOK(["sync", "--store", a, "--with", b])
        #expect(plain.stdout.contains("views: equal"), "\(plain)")
        let neither = try replay(["sync", "--store", a])
        #expect(neither.status == 64 && neither.stderr.contains("name exactly one of --with DIR and --server URL"), "\(neither)")
    }

    /// A bad value is refused when the command line is parsed: exit 64, the first line names the
    /// option (or argument) and the rule, and nothing is created at the store path.
    @Test(arguments: [
        (["show", "--reader", "bad"], "'--reader <reader>'", "not a UUID"),
        (["export", "--reader", "7A1C0E3E-4A64-4C43-9C5B"], "'--reader <reader>'", "not a UUID"),
        (["audit", "--reader", "7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11", "--book", "x"], "'--book <book>'", "not a UUID"),
        (["report", "--reader", "1", "--out", "r.html"], "'--reader <reader>'", "not a UUID"),
        (["sync", "register", "--server", "http://127.0.0.1:1", "--reader", "no", "--name", "phone"], "'--reader <reader>'", "not a UUID"),
        (["partner", "end", "--server", "http://127.0.0.1:1", "not-a-reader"], "'<reader>'", "not a UUID"),
        (["show", "--zone", "Mars/Olympus_Mons"], "'--zone <zone>'", "not an IANA time zone identifier"),
        (["import-from", "goodreads", "x.csv", "--reader", "7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11", "--zone", "Seoul"],
         "'--zone <zone>'", "not an IANA time zone identifier"),
        (["report", "--reader", "7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11", "--out", "r.html", "--zone", "UTC+9"],
         "'--zone <zone>'", "not an IANA time zone identifier"),
        (["audit", "--since", "2025-13-01"], "'--since <date-or-instant>'", "not an ISO 8601 date"),
        (["audit", "--until", "12025-01-01"], "'--until <date-or-instant>'", "the year 12025 is outside 1 ... 9999"),
        (["show", "--as-of", "1899-12-31"], "'--as-of <date-or-instant>'", "the year 1899 is outside 1900 ... 2199"),
        (["report", "--reader", "7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11", "--out", "r.html", "--year", "1800"],
         "'--year <year>'", "the year 1800 is outside 1900 ... 2199"),
        (["report", "--reader", "7a1c0e3e-4a64-4c43-9c5b-2b7d1e0f6a11", "--out", "r.html", "--year", "twenty"],
         "'--year <year>'", "not a whole number"),
        (["sync", "--server", "ftp://127.0.0.1"], "'--server <url>'", "not an http(s) URL"),
        (["partner", "list", "--server", "127.0.0.1:8080"], "'--server <url>'", "not an http(s) URL"),
        (["audit", "--type", "PageRead"], "'--type <type>'", "not an event type; types are "),
        (["export", "--since-vector", "x:1"], "'--since-vector <replica:sequence,...>'", "[rule: malformed]"),
        // Issue 36: the largest UInt64 made `export` trap on an overflow ("restore a backup").
        (["export", "--since-vector", "A0000000-0000-4000-8000-000000000001:18446744073709551615"],
         "'--since-vector <replica:sequence,...>'", "[rule: outOfRange]"),
    ])
    func badValuesNameTheOptionAndTheRule(arguments: [String], option: String, rule: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let run = try replay(arguments + ["--store", store], currentDirectory: dir.url)
        #expect(run.status == 64, "\(run)")
        let first = run.stderrLines.first ?? ""
        #expect(first.contains("is invalid for \(option): ") && first.contains(rule), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// `--since` after `--until` is refused by the shared range options, in `show` and in `audit`.
    @Test(arguments: ["show", "audit"])
    func aRangeThatEndsBeforeItStarts(command: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let run = try replay([command, "--since", "2025-02-01", "--until", "2025-01-31T23:00:00Z", "--store", dir.path("store")])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderrLines.first == "Error: --since 2025-02-01 is after --until 2025-01-31T23:00:00.000000Z", "\(run)")
    }
}
