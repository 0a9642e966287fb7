import Foundation
import ReadingEvents
import TestSupport
import Testing

/// `replay sync --with` where one store has one flipped bit in its `data.mdb` (seeded trials, the
/// damaged store on either side): the run never dies by a signal; it either completes (the damage
/// was in unused space) or fails with one line naming the cause, and the healthy store verifies,
/// keeps its own events and takes none but intact events of the original. Before, some trials died with
/// SIGSEGV while `verify` of the same copy reported the damage in one line (issue 36, "also found").
/// `SYNC_FLIP_TRIALS` sets the number of trials (CI: 12; `Scripts/stress.sh long`: 300).
@Suite struct SyncDamagedStoreCLITests {
    @Test func syncWithADamagedStoreFailsInOneLineOrCompletes() throws {
        let trials = ProcessInfo.processInfo.environment["SYNC_FLIP_TRIALS"].flatMap(Int.init) ?? 12
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let original = dir.path("original")
        try makeDemoStore(at: original)
        let data = try Data(contentsOf: dir.child("original").appendingPathComponent("data.mdb"))
        // The original's events by ID: the only events a healthy store may take from a damaged copy.
        let reference = try Self.facts(replayOK(["export", "--store", original]).stdoutLines)
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["RELIABILITY_SEED"].flatMap(Int.init) ?? 0x5EC_0036))
        var outcomes: [String: Int] = [:]
        var deaths: [String] = []
        for trial in 0..<trials {
            var bytes = [UInt8](data)
            // The first 2 pages are LMDB's meta pages; flip a bit in the pages after them.
            let offset = Int.random(in: 8192..<bytes.count, using: &rng)
            let bit = UInt8.random(in: 0...7, using: &rng)
            bytes[offset] ^= UInt8(1) << bit
            let damaged = dir.child("damaged-\(trial)")
            try FileManager.default.createDirectory(at: damaged, withIntermediateDirectories: true)
            try Data(bytes).write(to: damaged.appendingPathComponent("data.mdb"))
            // The healthy store: another replica, with an event of its own.
            let healthy = dir.path("healthy-\(trial)")
            try replayOK(["demo", "--store", healthy, "--quiet", "--readers", "1", "--days", "3"])
            let before = try replayOK(["export", "--store", healthy]).stdoutLines
            // Even trials: the damaged store runs the sync; odd ones: it is the peer.
            let damagedRuns = trial % 2 == 0
            let arguments = damagedRuns
                ? ["sync", "--store", damaged.path, "--with", healthy]
                : ["sync", "--store", healthy, "--with", damaged.path]
            let where_ = "trial \(trial) (byte \(offset) bit \(bit), damaged store \(damagedRuns ? "runs" : "is the peer"))"
            let sync = try replayRaw(arguments)
            if sync.died {
                deaths.append("\(where_): killed by signal \(sync.status): \(sync.stderr.prefix(400))")
                outcomes["killed by signal \(sync.status)", default: 0] += 1
            } else if sync.status == 0 {
                outcomes["sync ok", default: 0] += 1
            } else {
                let lines = sync.stderr.split(separator: "\n", omittingEmptySubsequences: true)
                #expect(lines.count == 1, "\(where_): exit \(sync.status) with \(lines.count) lines: \(sync.stderr.prefix(600))")
                #expect(sync.status == 1, "\(where_): exit \(sync.status): \(sync.stderr.prefix(300))")
                outcomes["sync refused", default: 0] += 1
            }
            let verify = try replay(["verify", "--store", healthy])
            #expect(verify.status == 0, "\(where_): the healthy store no longer verifies: \(verify.stderr.prefix(300)) \(verify.stdout.prefix(300))")
            // What the healthy store holds now: what it held, and only intact events of the
            // original (a sync that fails late, on damaged views, has merged the intact events).
            let after = try Self.facts(replay(["export", "--store", healthy]).stdoutLines)
            let held = try Self.facts(before)
            for (id, fact) in after where held[id] != fact && reference[id] != fact {
                Issue.record("\(where_): the healthy store took event \(id) that is neither its own nor the original's: \(fact)")
            }
            #expect(held.allSatisfy { after[$0.key] == $0.value }, "\(where_): the healthy store lost or changed its own events")
            if sync.died { #expect(after.count == held.count, "\(where_): a sync killed by a signal changed the healthy store") }
            try? FileManager.default.removeItem(at: damaged)
            try? FileManager.default.removeItem(atPath: healthy)
        }
        #expect(deaths.isEmpty, "\(deaths.count) of \(trials) syncs died by a signal: \(deaths.prefix(3))")
        print("RELIABILITY sync flips: \(trials) trials; " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
    }

    /// Each exported line's event ID and its fact (type and data), as JSON text with sorted keys.
    static func facts(_ lines: [String]) throws -> [String: String] {
        var facts: [String: String] = [:]
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let id = try #require(object["eventID"] as? String)
            let fact: [String: Any] = ["type": object["type"] ?? "", "data": object["data"] ?? [:], "occurredAt": object["occurredAt"] ?? ""]
            facts[id] = String(decoding: try JSONSerialization.data(withJSONObject: fact, options: [.sortedKeys]), as: UTF8.self)
        }
        return facts
    }

    /// The free-page list's first entry says its page list is 1 MiB longer than it is (one bit
    /// of its size, as trial byte 294873 of the original finding): every write transaction reads
    /// the list, and LMDB read past the end of the file (SIGBUS) in `sync --with`, the damaged
    /// store on either side. Now both directions fail with one line naming the page, and the
    /// healthy store is unchanged.
    @Test(arguments: [true, false])
    func aDamagedFreePageListIsOneLineNotASignal(damagedRuns: Bool) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let original = dir.path("original")
        try makeDemoStore(at: original)
        var bytes = [UInt8](try Data(contentsOf: dir.child("original").appendingPathComponent("data.mdb")))
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        // LMDB's meta pages (0 and 1): page size at 40, the free list's MDB_db at 40 (root at
        // +40), the transaction ID at 144; the newer one is current.
        let pageSize = u16(40) | u16(42) << 16
        let meta = u64(pageSize + 144) > u64(144) ? pageSize : 0
        let root = u64(meta + 80)
        try #require(root != UInt64.max, "the demo store has no free-page list")
        let page = Int(root) * pageSize
        try #require(u16(page + 10) & 0x02 != 0, "the free list's root is not a leaf page")
        let node = page + u16(page + 16)
        bytes[node + 2] ^= 0x10   // mn_hi: the value's size + 1 MiB
        let damaged = dir.child("damaged")
        try FileManager.default.createDirectory(at: damaged, withIntermediateDirectories: true)
        try Data(bytes).write(to: damaged.appendingPathComponent("data.mdb"))
        let healthy = dir.path("healthy")
        try replayOK(["demo", "--store", healthy, "--quiet", "--readers", "1", "--days", "3"])
        let before = try replayOK(["export", "--store", healthy]).stdoutLines
        let sync = try replayRaw(damagedRuns ? ["sync", "--store", damaged.path, "--with", healthy]
                                             : ["sync", "--store", healthy, "--with", damaged.path])
        #expect(!sync.died, "sync killed by signal \(sync.status): \(sync.stderr.prefix(400))")
        #expect(sync.status == 1 && sync.stderr.split(separator: "\n").count == 1, "exit \(sync.status): \(sync.stderr.prefix(400))")
        #expect(sync.stderr.contains("data.mdb is damaged") && sync.stderr.contains("free-page list"), "\(sync.stderr.prefix(400))")
        #expect(try replay(["export", "--store", healthy]).stdoutLines == before)
        #expect(try replay(["verify", "--store", healthy]).status == 0)
        // `verify` names the same damage in one line.
        let verify = try replayRaw(["verify", "--store", damaged.path])
        #expect(!verify.died && verify.status == 1 && verify.stderr.contains("free-page list"), "\(verify.status): \(verify.stderr.prefix(400))")
    }
}
