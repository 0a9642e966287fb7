import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// Knobs of the reliability suites: environment variables with short CI defaults (see
/// Scripts/stress.sh for the long run).
enum Reliability {
    static func int(_ name: String, _ ciDefault: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? ciDefault
    }

    /// A figure line the stress script greps (`RELIABILITY name: ...`).
    static func report(_ name: String, _ text: String) {
        print("RELIABILITY \(name): \(text)")
    }

    static func seconds(_ d: Duration) -> String {
        String(format: "%.1f s", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }
}

/// Kills, two processes, snapshots, stale reader slots, map growth and a full disk. Child
/// processes: run one at a time.
@Suite(.serialized) struct ReliabilityProcessTests {
    // MARK: 1. SIGKILL of a facade writer at random moments

    /// Alternates single commands (`facade-execute`: one `execute` per event) and batches
    /// (`demo-appends`: `appendRecorded` chunks of 37 events) and kills the writer at a random
    /// moment. After each kill: every acknowledged event at its acknowledged position, the new
    /// events of the trial a whole number of batches, views caught up and equal to a fresh fold,
    /// the log intact.
    @Test func killedFacadeWritersLoseNothingAcknowledgedAndLeaveNoPartialBatch() throws {
        let trials = Reliability.int("RELIABILITY_KILL_TRIALS", 10)
        let batch = 37
        var rng = SplitMix64(seed: UInt64(Reliability.int("RELIABILITY_SEED", 0xC0FFEE)))
        let dir = TempDirectory()
        defer { dir.remove() }
        let url = dir.child("store")
        do { _ = try ReadingStore.open(at: url) }
        var kills = 0, acknowledged = 0, finished = 0
        let clock = ContinuousClock()
        let started = clock.now
        for trial in 0..<trials {
            let batched = trial % 2 == 1
            let before = try { () throws -> UInt64 in let s = try ReadingStore.open(at: url); return try s.log.lastPosition() }()
            let arguments = batched
                ? ["demo-appends", url.path, "--chunk", "\(batch)", "--readers", "1", "--days", "200", "--seed", "\(rng.next() % 1_000_000)"]
                : ["facade-execute", url.path, "--prefix", "k\(trial)-\(rng.next() % 1_000_000)"]
            let child = try HelperProcess(arguments)
            // Killed after a random number of acknowledgements (at least one: the child is past
            // its open), then 0-20 ms. A sleep of 0-250 ms after the first acknowledgement let 5
            // of 10 writers finish in a fresh-clone .ci/run: a task sleeping on the cooperative pool
            // woke seconds late while other tests held its threads. This wait is synchronous.
            let acksBeforeKill = Int.random(in: 1...(batched ? 10 : 200), using: &rng)
            let delay = Int.random(in: 0...20, using: &rng)
            child.kill9(afterLines: acksBeforeKill, timeout: .seconds(120), then: .milliseconds(delay),
                        stop: { $0 == "done" }) { $0.hasPrefix("ack ") }
            let status = child.waitForExit()
            let lines = child.lines
            if lines.contains("done") { finished += 1 } else {
                kills += 1
                #expect(status == SIGKILL, "trial \(trial): \(lines.suffix(2))")
            }
            let acks = lines.filter { $0.hasPrefix("ack ") }
            acknowledged += acks.count
            let store = try ReadingStore.open(at: url)
            let last = try store.log.lastPosition()
            #expect(try store.viewCheckpoint() == last, "trial \(trial): views did not catch up")
            for ack in acks {
                let fields = ack.split(separator: " ")
                let stored = try store.log.event(withID: UUID(uuidString: String(fields[2]))!)
                #expect(stored?.position == UInt64(fields[1]), "trial \(trial): acknowledged \(ack) is missing")
            }
            if batched, !lines.contains("done") {
                // Whole batches of 37, or the whole history when the child was killed after its
                // last (shorter) batch committed but before it printed "done".
                let total = lines.first { $0.hasPrefix("start ") }.flatMap { UInt64($0.dropFirst(6)) }
                let added = last - before
                #expect(added % UInt64(batch) == 0 || added == total,
                        "trial \(trial): \(added) new events is not whole batches of \(batch) (history \(total ?? 0))")
            }
            if !lines.contains("done") {
                #expect(last >= before + UInt64(acks.count) * (batched ? UInt64(batch) : 1), "trial \(trial)")
            }
            #expect(try store.viewDigest() == store.freshFoldDigest(), "trial \(trial): views differ from a fresh fold")
            let report = try store.log.verify()
            #expect(report.isIntact, "trial \(trial): \(report.faults.prefix(3))")
        }
        Reliability.report("kill", "\(trials) trials, \(kills) killed mid-run, \(finished) finished, \(acknowledged) acknowledged commits/batches, \(Reliability.seconds(started.duration(to: clock.now)))")
        if trials > 0 { #expect(kills > 0, "no trial killed the writer mid-run") }
    }

    // MARK: 5. two processes x threads, snapshots, stale readers

    @Test func twoProcessesWithManyThreadsKeepPositionsGaplessAndUnique() throws {
        let processes = 2
        let threads = Reliability.int("RELIABILITY_THREADS", 4)
        let perThread = Reliability.int("RELIABILITY_APPENDS_PER_THREAD", 300)
        try withTempDirectory { dir in
            let url = dir.child("store")
            let small = LMDBEnvironmentOptions(mapSize: 256 << 10)
            do { _ = try EventLog.open(at: url, options: small) }
            let clock = ContinuousClock()
            let started = clock.now
            let children = try (0..<processes).map { p in
                try HelperProcess(["threaded-appends", url.path, "--threads", "\(threads)", "--count", "\(perThread)",
                                   "--prefix", "p\(p)", "--map-size", "\(256 << 10)"])
            }
            for child in children { #expect(child.waitForExit() == 0) }
            let elapsed = started.duration(to: clock.now)
            for child in children { #expect(child.lines == ["done \(threads * perThread) errors 0"], "\(child.lines)") }
            let log = try EventLog.open(at: url)
            let total = processes * threads * perThread
            let events = try log.read()
            #expect(events.count == total)
            #expect(events.map(\.position) == Array(1...UInt64(total)), "positions are not gapless")
            let expected = Set((0..<processes).flatMap { p in (0..<threads).flatMap { t in
                (0..<perThread).map { deterministicID(prefix: "p\(p)-\(t)", index: $0) } } })
            #expect(Set(events.map(\.eventID)) == expected)
            #expect(try log.verify().isIntact)
            Reliability.report("two-processes", "\(processes) processes x \(threads) threads x \(perThread) appends = \(total) events in \(Reliability.seconds(elapsed)) (\(Int(Double(total) / max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))) appends/s), gapless, all IDs present, 0 errors")
        }
    }

    @Test func aReaderProcessKeepsItsSnapshotWhileEventsAreAppended() async throws {
        let appends = Reliability.int("RELIABILITY_SNAPSHOT_APPENDS", 5_000)
        try await withTempDirectory { dir in
            let url = dir.child("store")
            let log = try EventLog.open(at: url, options: LMDBEnvironmentOptions(mapSize: 256 << 10))
            var rng = SplitMix64(seed: 77)
            try log.append(randomEvents(100, using: &rng), to: "before")
            let signal = dir.child("release")
            let child = try HelperProcess(["snapshot-hold", url.path, "--until-file", signal.path])
            #expect(await child.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("holding ") })
            #expect(child.lines.first == "holding 100")
            var written = 0
            while written < appends {
                let n = min(1_000, appends - written)
                try log.append(randomEvents(n, using: &rng, maxPayload: 200), to: "after")
                written += n
            }
            #expect(try log.lastPosition() == UInt64(100 + appends))
            _ = FileManager.default.createFile(atPath: signal.path, contents: Data())
            #expect(child.waitForExit() == 0)
            #expect(child.lines.last == "snapshot 100 0", "\(child.lines)")
            Reliability.report("snapshot", "a reader snapshot at position 100 still read 100 (0 later records) after \(appends) appends; map grew to \(log.environment.mapSize) bytes")
        }
    }

    @Test func readerSlotsOfSeveralKilledProcessesAreReclaimedAtTheNextOpen() async throws {
        try await withTempDirectory { dir in
            let url = dir.child("store")
            let log = try EventLog.open(at: url)  // held open, so the reader table is not reset
            let holders = try (0..<3).map { _ in try HelperProcess(["hold-snapshot", url.path]) }
            for holder in holders { #expect(await holder.waitForLine(timeout: .seconds(60)) { $0 == "holding" }) }
            for holder in holders { holder.kill9(); holder.waitForExit() }
            let checker = try HelperProcess(["reader-check", url.path])
            #expect(checker.waitForExit() == 0)
            #expect(checker.lines == ["cleared 3"])
            let again = try HelperProcess(["reader-check", url.path])
            #expect(again.waitForExit() == 0)
            #expect(again.lines == ["cleared 0"])
            withExtendedLifetime(log) {}
            Reliability.report("stale-readers", "3 killed snapshot holders, staleReadersCleared 3 at the next open, 0 at the one after")
        }
    }

    // MARK: 6. map growth and a full disk

    @Test func theMapGrowsFromATinySizeWithNoErrorReachingTheCaller() throws {
        let targetMB = Reliability.int("RELIABILITY_MAP_TARGET_MB", 64)
        try withTempDirectory { dir in
            let url = dir.child("store")
            let log = try EventLog.open(at: url, options: LMDBEnvironmentOptions(mapSize: 256 << 10))
            var rng = SplitMix64(seed: 6)
            let payload = (0..<16_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var appended = 0
            let clock = ContinuousClock()
            let started = clock.now
            let file = url.appendingPathComponent("data.mdb")
            func fileSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0 }
            while fileSize() < targetMB << 20 {
                try log.append((0..<64).map { _ in NewEvent(payload: payload) }, to: "grow")
                appended += 64
            }
            #expect(log.environment.mapSize >= targetMB << 20)
            #expect(try log.lastPosition() == UInt64(appended))
            let report = try log.verify()
            #expect(report.isIntact && report.recordCount == UInt64(appended))
            Reliability.report("map-growth", "256 KiB map grew to \(log.environment.mapSize >> 20) MiB, data.mdb \(fileSize() >> 20) MiB, \(appended) x 16 KB events in \(Reliability.seconds(started.duration(to: clock.now))), no error reached the caller, verify intact")
        }
    }

    @Test func aFullDiskGivesAClearErrorAndTheStoreStaysReadable() throws {
        try withTempDirectory { dir in
            guard let mountPoint = try mountTmpfs(in: dir, size: "4m") else { return }
            defer { unmount(mountPoint) }
            let url = mountPoint.appendingPathComponent("store")
            var rng = SplitMix64(seed: 66)
            var acknowledged: UInt64 = 0
            var failure: Error?
            do {
                let store = try ReadingStore.open(at: url)
                let log = store.log
                for round in 0..<10_000 {
                    do {
                        let result = try log.append(randomEvents(20, using: &rng, maxPayload: 4_000), to: "fill")
                        acknowledged = result.lastPosition
                    } catch {
                        failure = error
                        Reliability.report("full-disk", "append \(round) failed after \(acknowledged) acknowledged events: \(error)")
                        break
                    }
                }
                // The failed store object still reads what was acknowledged, or fails with a typed error.
                do { #expect(try log.lastPosition() >= acknowledged) } catch { #expect(error is LMDBError, "\(error)") }
            }
            let error = try #require(failure, "4 MB never filled up")
            #expect(error is LMDBError, "\(type(of: error)): \(error)")
            if let lmdb = error as? LMDBError {
                // LMDB 0.9.24 reports a full disk at commit as EIO (a short pwrite); the store names it.
                #expect(lmdb.kind == .diskFull && lmdb.description.contains("the disk is full"), "\(lmdb)")
            }
            // Reopened: readable, every acknowledged event there, the chain intact.
            let log = try EventLog.open(at: url)
            #expect(try log.lastPosition() == acknowledged)
            let report = try log.verify()
            #expect(report.isIntact, "\(report.faults.prefix(3))")
            #expect(report.recordCount == acknowledged)
        }
    }
}
