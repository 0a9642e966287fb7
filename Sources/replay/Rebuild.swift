import ArgumentParser
import EventStoreLMDB
import Foundation

/// The persisted views, as `--view` values.
enum ViewName: String, ExpressibleByArgument, CaseIterable {
    case books, days, bookDays, months, buckets, runs, readers, goals
}

extension Replay {
    struct Rebuild: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild the views (or one) from the log into a shadow, then swap it in atomically.",
            discussion: """
                A crash or error before the final commit leaves the old views intact. On a terminal a progress \
                bar shows events/s and time left; a final line always gives the count, time and rate.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "Rebuild only this view.") var view: ViewName?
        @Flag(help: "Print the report as JSON.") var json = false

        func run() throws {
            let store = try options.openExisting()
            let total = try store.lastPosition()
            let start = ContinuousClock.now
            let interactive = stderrIsTerminal && !json
            let report = try store.rebuild(view: view?.rawValue) { done, all in
                guard interactive, all > 0 else { return }
                let elapsed = seconds(since: start)
                let rate = elapsed > 0 ? Double(done) / elapsed : 0
                let left = rate > 0 ? Double(all - min(all, done)) / rate : 0
                let width = 30
                let filled = Int(Double(width) * Double(done) / Double(all))
                let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: max(0, width - filled))
                FileHandle.standardError.write(Data(String(format: "\r[%@] %3.0f%% %d/%d events · %.0f events/s · %.0f s left ",
                                                           bar, 100 * Double(done) / Double(all), done, all, rate, left).utf8))
            }
            if interactive { warn("") }
            if json {
                try printJSON(["events": report.events, "seconds": report.seconds, "eventsPerSecond": report.eventsPerSecond,
                               "digest": report.digest, "view": view?.rawValue ?? "all", "logEvents": total])
            } else {
                print(String(format: "rebuilt %@ from %llu events in %.2f s (%.0f events/s); digest %@",
                             view?.rawValue ?? "all views", report.events, report.seconds, report.eventsPerSecond, report.digest))
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every record's checksum, the hash chain, gapless positions, that every event decodes, and that the views equal a fresh rebuild.",
            discussion: """
                Prints each fault with its position; exits 1 on any fault. Writes nothing: the store is opened \
                read-only, so views that lag the log (left by a crash or by an append that did not fold) are \
                compared with a fresh fold up to their checkpoint, and the lag is reported as a fault.
                """)

        @OptionGroup var options: StoreOptions
        @Flag(help: "Print the report as JSON.") var json = false
        @Flag(help: .hidden) var inProcess = false

        func run() throws {
            // LMDB keeps no page checksums: on a damaged file its own code can assert or fault
            // while walking the B-tree. The check runs in a child process, so such a death is
            // reported as damage instead of killing `verify`.
            if !inProcess {
                let status = try runSelf(arguments: Array(CommandLine.arguments.dropFirst()) + ["--in-process"])
                switch status {
                case .exited(0): return
                case .exited(let code): throw ExitCode(code)
                case .signalled(SIGPIPE):
                    // The reader of our output went away (`| head`): not damage; end as a shell would.
                    throw ExitCode(128 + SIGPIPE)
                case .signalled(let signal):
                    throw ReplayError("the data file of \(options.url.path) is damaged: LMDB stopped with signal \(signal) while reading its pages (restore from a backup)")
                }
            }
            endWithParent()
            let store = try options.openExisting(readOnly: true)
            let chain = try store.verifyLog()
            var faults = chain.faults.map { ["position": $0.position, "kind": "\($0.kind)", "detail": $0.detail] as [String: Any] }
            var decoded = 0, unknown = 0
            var unknownTypes: [String: Int] = [:]
            if chain.isIntact {
                try store.forEachRecord(from: 1) { record in
                    do {
                        let envelope = try ReadingStore.envelope(of: record)
                        decoded += 1
                        if case .unknown(let u) = envelope.event { unknown += 1; unknownTypes[u.type, default: 0] += 1 }
                    } catch {
                        faults.append(["position": record.position, "kind": "undecodable", "detail": "\(error)"])
                    }
                    return true
                }
            }
            if chain.isIntact {
                for fault in try store.verifyReplication() {
                    faults.append(["position": fault.position, "kind": "replication", "detail": fault.detail + " (sync may skip or resend events)"])
                }
            }
            let quarantined = try store.quarantine().count
            var stored = "", fresh = ""
            let checkpoint = try store.viewCheckpoint()
            let lag = chain.lastPosition > checkpoint ? chain.lastPosition - checkpoint : 0
            if faults.isEmpty, lag > 0 {
                // Appends fold in their own transaction, so views never lag after a crash: views
                // behind the log were emptied, or written by something that did not fold.
                faults.append(["position": checkpoint + 1, "kind": "views",
                               "detail": "the views fold the log only up to position \(checkpoint) of \(chain.lastPosition) (\(lag) event(s) behind); run `replay rebuild`"])
            }
            if chain.isIntact, faults.allSatisfy({ $0["kind"] as? String == "views" }) {
                stored = try store.viewDigest()
                fresh = try store.freshFoldDigest(through: checkpoint)
                if stored != fresh {
                    faults.append(["position": checkpoint, "kind": "views",
                                   "detail": "stored views (digest \(stored)) differ from a fresh fold of the log up to their checkpoint \(checkpoint) (digest \(fresh)); run `replay rebuild`"])
                }
            }
            if json {
                try printJSON(["records": chain.recordCount, "lastPosition": chain.lastPosition, "decoded": decoded,
                               "unknownTypes": unknownTypes, "viewDigest": stored, "freshDigest": fresh, "faults": faults,
                               "viewCheckpoint": checkpoint, "viewLag": lag, "quarantined": quarantined, "ok": faults.isEmpty])
            } else {
                for fault in faults { print("fault at position \(fault["position"]!): \(fault["kind"]!): \(fault["detail"]!)") }
                print("\(chain.recordCount) records, last position \(chain.lastPosition), \(decoded) decoded, \(unknown) of unknown types\(unknownTypes.isEmpty ? "" : " \(unknownTypes)")")
                if faults.isEmpty { print("views digest \(stored) = fresh rebuild") }
                if quarantined > 0 { print("\(quarantined) event(s) of other replicas in the quarantine (`replay sync --quarantine` lists them)") }

            }
            if !faults.isEmpty {
                let first = faults.compactMap { $0["position"] as? UInt64 }.min() ?? 0
                throw ReplayError("verify found \(faults.count) fault(s); the first at position \(first)")
            }
        }
    }

    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a compact copy of the store to DEST, also while another process appends.",
            discussion: """
                DEST must not exist or be an empty directory. The copy is a consistent snapshot (mdb_env_copy2 with \
                MDB_CP_COMPACT), written to a hidden temporary directory beside DEST (0700, data.mdb 0600) and renamed \
                to DEST only when complete: a failed or killed backup leaves nothing at DEST.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The directory to write the copy to.") var destination: String

        func run() throws {
            let store = try options.openExisting(readOnly: true)
            let url = URL(fileURLWithPath: destination)
            let size = try store.backup(to: url)
            print("backed up \(try store.lastPosition()) events to \(url.path) (\(size) bytes)")
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Events per type and per reader, file and map size, last position, view checkpoints.")

        @OptionGroup var options: StoreOptions
        @Flag(help: "Print the statistics as JSON.") var json = false

        func run() throws {
            let store = try options.openExisting()
            var perType: [String: Int] = [:]
            var perReader: [String: Int] = [:]
            try store.forEachEvent(from: 1) { envelope in
                perType[envelope.type.tag, default: 0] += 1
                perReader[envelope.reader.description, default: 0] += 1
                return true
            }
            let fileSize = (try? FileManager.default.attributesOfItem(atPath: options.url.appendingPathComponent("data.mdb").path)[.size] as? Int) ?? 0
            let last = try store.lastPosition()
            let checkpoint = try store.viewCheckpoint()
            if json {
                try printJSON(["eventsPerType": perType, "eventsPerReader": perReader, "fileBytes": fileSize,
                               "mapBytes": store.mapSize, "lastPosition": last, "viewCheckpoint": checkpoint,
                               "dayStartHour": store.dayStartHour])
            } else {
                print("last position \(last) · view checkpoint \(checkpoint) · data.mdb \(fileSize) bytes · map \(store.mapSize) bytes · day starts at \(store.dayStartHour):00")
                print("events per type:")
                for (type, count) in perType.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) { print("  \(type): \(count)") }
                print("events per reader:")
                for (reader, count) in perReader.sorted(by: { $0.key < $1.key }) { print("  \(reader): \(count)") }
            }
        }
    }
}

/// How a child process ended.
enum ChildStatus {
    case exited(Int32)
    case signalled(Int32)
}

/// Runs this executable again with `arguments`, sharing stdin, stdout and stderr.
///
/// The child is a worker of this process: SIGINT, SIGTERM and SIGHUP that reach this process
/// (Foundation starts the child in its own process group, so a terminal's Ctrl-C reaches only
/// this one) are forwarded to it, and when it ends by one of them this process ends the same way.
/// The child learns this process's id from `REPLAY_PARENT_PID` and ends when it is gone (see
/// ``endWithParent()``), so a killed parent leaves no worker holding its output.
func runSelf(arguments: [String]) throws -> ChildStatus {
    let process = Process()
    let executable = executablePath()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    // A child that dies on a damaged file is reported in one line by the parent: the Swift
    // runtime's crash backtrace (dozens of lines) must not reach the user.
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment[parentPIDVariable] = String(getpid())
    process.environment = environment
    try process.run()
    // Installed after the child started, so it does not inherit the ignored dispositions; a
    // signal before this point ends this process, and the child follows (endWithParent).
    let child = process.processIdentifier
    let forwarded: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    let sources = forwarded.map { sig in
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler { kill(child, sig) }
        source.resume()
        return source
    }
    process.waitUntilExit()
    for source in sources { source.cancel() }
    for sig in forwarded { signal(sig, SIG_DFL) }
    switch process.terminationReason {
    case .exit: return .exited(process.terminationStatus)
    case .uncaughtSignal:
        if forwarded.contains(process.terminationStatus) { raise(process.terminationStatus) }
        return .signalled(process.terminationStatus)
    @unknown default: return .exited(process.terminationStatus)
    }
}

/// The environment variable that tells a worker (``runSelf(arguments:)``) its parent's process id.
private let parentPIDVariable = "REPLAY_PARENT_PID"

/// In a worker started by ``runSelf(arguments:)``: ends this process at once when the parent is
/// gone (killed, or ended by a signal), so no worker keeps running or holds the parent's output.
///
/// A thread checks the parent's id every 100 ms (`getppid` changes when the parent dies); this works
/// on every platform, whereas Linux's `prctl(PR_SET_PDEATHSIG)` is a variadic C function Swift
/// cannot call.
func endWithParent() {
    guard let text = ProcessInfo.processInfo.environment[parentPIDVariable], let parent = pid_t(text) else { return }
    if getppid() != parent { _exit(1) }
    let watcher = Thread {
        while getppid() == parent { usleep(100_000) }
        _exit(1)
    }
    watcher.start()
}
