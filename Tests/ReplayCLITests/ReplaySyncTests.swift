import Foundation
import TestSupport
import Testing

/// `replay sync [run] --store A --with B`, `replay sync vector|quarantine` and `export --since-vector` with the built binary.
@Suite("replay sync and export --since-vector")
struct ReplaySyncTests {
    /// The value after "prefix " on the line that starts with it.
    func value(_ run: ReplayRun, _ prefix: String) -> String? {
        run.stdoutLines.first { $0.hasPrefix(prefix + " ") }.map { String($0.dropFirst(prefix.count + 1)) }
    }

    @Test("two demo stores of different seeds converge, a second sync moves nothing, and both verify")
    func twoDemoStoresConverge() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a"), b = temp.path("b")
        try replayOK(["demo", "--store", a, "--readers", "2", "--days", "60", "--seed", "1", "--quiet"])
        try replayOK(["demo", "--store", b, "--readers", "2", "--days", "60", "--seed", "2", "--quiet"])
        let countA = try replayOK(["export", "--store", a]).stdoutLines.count
        let countB = try replayOK(["export", "--store", b]).stdoutLines.count
        let first = try replayOK(["sync", "run", "--store", a, "--with", b, "--batch", "100"])
        #expect(first.stdoutLines[0] == "\(a) -> \(b): \(countA) received: \(countA) new, 0 already held, 0 books refolded", "\(first)")
        #expect(first.stdoutLines[1] == "\(b) -> \(a): \(countB) received: \(countB) new, 0 already held, 0 books refolded", "\(first)")
        #expect(first.stdoutLines.last?.hasPrefix("views: equal (digest ") == true, "\(first)")
        #expect(value(first, "vector \(a):") == value(first, "vector \(b):"))
        // `run` is the default subcommand: the plain form exchanges too.
        let second = try replayOK(["sync", "--store", b, "--with", a])
        #expect(second.stdoutLines[0].hasSuffix(": 0 received: 0 new, 0 already held, 0 books refolded"), "\(second)")
        #expect(second.stdoutLines[1].hasSuffix(": 0 received: 0 new, 0 already held, 0 books refolded"), "\(second)")
        #expect(second.stdoutLines.last == first.stdoutLines.last)
        for store in [a, b] {
            let verify = try replayOK(["verify", "--store", store])
            #expect(verify.stdout.contains("= fresh rebuild"), "\(verify)")
            #expect(try replayOK(["export", "--store", store]).stdoutLines.count == countA + countB)
        }
    }

    @Test("export --since-vector carries exactly what the other store lacks, and import merges it")
    func fileTransport() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a"), b = temp.path("b")
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "40", "--seed", "3", "--quiet"])
        try replayOK(["demo", "--store", b, "--readers", "1", "--days", "40", "--seed", "4", "--quiet"])
        let vectorB = try #require(value(try replayOK(["sync", "vector", "--store", b]), "vector"))
        let delta = try replayOK(["export", "--store", a, "--since-vector", vectorB])
        let countA = try replayOK(["export", "--store", a]).stdoutLines.count
        #expect(delta.stdoutLines.count == countA)
        let file = temp.child("delta.jsonl")
        try delta.stdoutData.write(to: file)
        let imported = try replayOK(["import", "--store", b, file.path])
        #expect(imported.stdout.hasPrefix("imported \(countA) new events of \(countA)"), "\(imported)")
        // b now covers a: nothing more to send; a re-import adds nothing.
        let vectorAfter = try #require(value(try replayOK(["sync", "vector", "--store", b]), "vector"))
        #expect(try replayOK(["export", "--store", a, "--since-vector", vectorAfter]).stdoutLines.isEmpty)
        #expect(try replayOK(["import", "--store", b, file.path]).stdout.hasPrefix("imported 0 new events"))
    }

    /// Two demo stores of one seed but another size are two replicas (before: one replica ID per
    /// seed, so they were taken for copies of one store).
    @Test func demoStoresOfOneSeedAndAnotherSizeAreTwoReplicas() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a"), b = temp.path("b")
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "5", "--seed", "9", "--quiet"])
        try replayOK(["demo", "--store", b, "--readers", "1", "--days", "6", "--seed", "9", "--quiet"])
        let replicaA = value(try replayOK(["sync", "vector", "--store", a]), "replica")
        let replicaB = value(try replayOK(["sync", "vector", "--store", b]), "replica")
        #expect(replicaA != nil && replicaA != replicaB)
        let synced = try replayOK(["sync", "--store", a, "--with", b])
        #expect(synced.stdout.contains("views: equal"), "\(synced)")
        let listed = try replayOK(["sync", "quarantine", "--store", a])
        #expect(listed.stdout.contains("0 event(s) in the quarantine"), "\(listed)")
    }

    @Test("bad input: a malformed vector, the store itself, a file copy of the store")
    func refusals() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a")
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "5", "--quiet"])
        let bad = try replay(["export", "--store", a, "--since-vector", "not-a-uuid:3"])
        #expect(bad.status == 64 && bad.stderr.contains("--since-vector") && bad.stderr.contains("malformed"), "\(bad)")
        let zero = try replay(["export", "--store", a, "--since-vector", "6849e859-0615-483d-b548-f13b92e952a4:0"])
        #expect(zero.status == 64 && zero.stderr.contains("outOfRange"), "\(zero)")
        let itself = try replay(["sync", "--store", a, "--with", a])
        #expect(itself.status == 1 && itself.stderr.contains("names the store itself"), "\(itself)")
        let copy = temp.path("copy")
        try FileManager.default.copyItem(atPath: a, toPath: copy)
        // A file copy is another replica from its first writable open on (issue 22): the two
        // sync, each with its own new events.
        let copied = try replay(["sync", "--store", a, "--with", copy])
        #expect(copied.status == 0 && copied.stdout.contains("views: equal"), "\(copied)")
    }
}
