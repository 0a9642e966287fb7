import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 24, "Hardening 2", through the built `replay` binary: output files (`report --out`),
/// read commands on a path without a store, a store whose files are not regular files, and
/// `--in-process` workers that outlive their parent.
@Suite struct OutputHardeningCLITests {
    /// `report --out` replaced whatever the path named. Now a FIFO, a device, a symbolic link, a
    /// directory and a store's own files are refused with one line naming the path and the reason,
    /// and left as they were. The device is a null device the test makes in its own directory.
    @Test func reportOutRefusesWhatIsNotARegularFileOutsideAStore() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try ReportBrowserTests.demoReader(in: dir)
        let report = ["report", "--store", store, "--reader", reader, "--year", "2025", "--out"]

        let fifo = dir.path("fifo.html")
        #expect(mkfifo(fifo, 0o600) == 0)
        let outside = dir.path("outside.html")
        try Data("outside".utf8).write(to: URL(fileURLWithPath: outside))
        let link = dir.path("link.html")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: outside)
        let directory = dir.path("a-directory")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        var cases: [(path: String, reason: String, fileType: mode_t)] = [
            (fifo, "FIFO", S_IFIFO), (link, "symbolic link", S_IFLNK), (directory, "is a directory", S_IFDIR),
            (store + "/data.mdb", "holds a store", S_IFREG), (store + "/lock.mdb", "holds a store", S_IFREG),
            (store + "/report.html", "holds a store", 0),
        ]
        let device = dir.path("null-device")
        if mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 {
            cases.append((device, "device", S_IFCHR))
        } else {
            print("reportOutRefusesWhatIsNotARegularFileOutsideAStore: the device case is skipped: mknod: \(String(cString: strerror(errno)))")
        }
        let storeBefore = try snapshot(of: URL(fileURLWithPath: store))
        for (path, reason, fileType) in cases {
            let run = try replay(report + [path])
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains(path) && run.stderr.contains(reason), "\(run)")
            var info = stat()
            if fileType == 0 {
                #expect(lstat(path, &info) != 0, "\(path) was created")
            } else {
                #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == fileType, "\(path) was replaced")
            }
        }
        #expect(try snapshot(of: URL(fileURLWithPath: store)) == storeBefore)
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "outside")
        #expect(try verifyReport(of: store)["ok"] as? Bool == true)
        // Nothing left behind in the directory (no temporary files).
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".") }.isEmpty)
    }

    /// The report page was 0644 (0666 under umask 000), and an existing 0600 report was replaced
    /// by a world-readable one. It is 0600 under any umask now.
    @Test func theReportIsPrivateUnderAnyUmask() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try ReportBrowserTests.demoReader(in: dir)
        let existing = dir.path("existing.html")
        #expect(FileManager.default.createFile(atPath: existing, contents: Data("old".utf8), attributes: [.posixPermissions: 0o600]))
        for (umask, out) in [("000", dir.path("new.html")), ("022", existing)] {
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", "umask \(umask); exec \"$0\" report --store \"$1\" --reader \"$2\" --year 2025 --out \"$3\"",
                               try replayExecutable.get().path, store, reader, out]
            shell.standardOutput = FileHandle.nullDevice
            try shell.run()
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0)
            let attributes = try FileManager.default.attributesOfItem(atPath: out)
            #expect(attributes[.posixPermissions] as? Int == 0o600, "umask \(umask): \(out)")
            #expect((attributes[.size] as? Int ?? 0) > 10_000)
        }
    }

    /// Read commands on an empty directory created a store and exited 0, so a mistyped `--store`
    /// became a new empty store. Now every read command says "no store at PATH", exits 1 and
    /// writes nothing (a missing directory is not created either).
    @Test func readCommandsOnAPathWithoutAStoreWriteNothing() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let empty = dir.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        let missing = dir.path("missing")
        let reader = "689ddf5d-2f38-432b-afc0-411c18fb0367"
        let commands: [[String]] = [
            ["show"], ["stats"], ["export"], ["audit"], ["rebuild"], ["verify"], ["sync", "vector"], ["sync", "quarantine"],
            ["report", "--reader", reader, "--out", dir.path("report.html")],
        ]
        for path in [empty, missing] {
            for command in commands {
                let run = try replay(command + ["--store", path])
                #expect(run.status == 1 && run.stderrLines.count == 1 && run.stderr.contains("no store at \(path)"), "\(run)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: missing))
        #expect(!FileManager.default.fileExists(atPath: dir.path("report.html")))
    }

    /// A `data.mdb` that is a FIFO hung every subcommand for ever (the open waits for a writer).
    /// The store's files are now checked with `stat` before anything opens them: one line naming
    /// the file and what it is. Runs that hang are killed (after a generous bound) and recorded.
    @Test func aDataFileThatIsAFIFOIsOneLineInEverySubcommand() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
        let fifo = store + "/data.mdb"
        #expect(mkfifo(fifo, 0o600) == 0)
        let exported = dir.path("empty.jsonl")
        try Data().write(to: URL(fileURLWithPath: exported))
        let commands: [[String]] = [
            ["stats"], ["show"], ["audit"], ["rebuild"], ["verify"], ["export"], ["sync", "vector"], ["backup", dir.path("copy")],
            ["import", exported], ["report", "--reader", "689ddf5d-2f38-432b-afc0-411c18fb0367", "--out", dir.path("r.html")],
        ]
        for command in commands {
            let run = try replayBounded(command + ["--store", store], unblocking: fifo)
            #expect(run.status == 1 && run.stderrLines.count == 1, "\(command): \(run)")
            #expect(run.stderr.contains("data.mdb") && run.stderr.contains("FIFO"), "\(command): \(run)")
        }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        #expect(!FileManager.default.fileExists(atPath: dir.path("copy")))
    }

    /// Killing `replay export` (or sending it SIGINT, as Ctrl-C does) left its `--in-process` worker
    /// running, blocked on the output pipe for ever. The worker now ends with its parent, and the
    /// parent forwards SIGINT and SIGTERM to it.
    ///
    /// Each signal is sent several times, as soon as the worker exists: the forwarding went through
    /// a DispatchSource, and about one signal in ten ran libdispatch's empty handler on the main
    /// thread and never reached it, so parent and worker waited on each other for ever (a CI run
    /// stalled here for 30 minutes). A parent whose worker ended by the forwarded signal also said
    /// "the data file … is damaged" and exited with status 1 instead of ending by the signal.
    @Test(arguments: [SIGKILL, SIGINT, SIGTERM])
    func theExportWorkerEndsWithItsParent(signal: Int32) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        // Far more than a pipe holds (64 KiB), so the worker blocks writing it.
        try replayOK(["demo", "--store", store, "--quiet", "--readers", "2", "--days", "200"])
        for attempt in 1...8 {
            let pipe = Pipe()
            let errors = dir.path("stderr-\(attempt)")
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            let errorHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
            let parent = Process()
            parent.executableURL = try replayExecutable.get()
            parent.arguments = ["export", "--store", store]
            parent.standardOutput = pipe.fileHandleForWriting
            parent.standardError = errorHandle
            parent.standardInput = FileHandle.nullDevice
            try parent.run()
            try pipe.fileHandleForWriting.close()
            try errorHandle.close()
            defer { try? pipe.fileHandleForReading.close() }
            let worker = try #require(waitForChild(of: parent.processIdentifier), "no worker appeared")
            #expect(kill(parent.processIdentifier, signal) == 0)
            guard waitBounded(parent) else {
                Issue.record("replay export did not end on signal \(signal) (attempt \(attempt)): it waits on its worker \(worker)")
                kill(parent.processIdentifier, SIGKILL)
                kill(worker, SIGKILL)
                parent.waitUntilExit()
                return
            }
            #expect(parent.terminationReason == .uncaughtSignal && parent.terminationStatus == signal,
                    "replay export ended with \(parent.terminationReason == .exit ? "status" : "signal") \(parent.terminationStatus), not by signal \(signal) (attempt \(attempt))")
            let said = String(decoding: try Data(contentsOf: URL(fileURLWithPath: errors)), as: UTF8.self)
            #expect(said.isEmpty, "replay export said, on signal \(signal): \(said)")
            let ended = waitUntilGone(worker)
            #expect(ended, "the worker \(worker) outlived its parent (signal \(signal), attempt \(attempt))")
            if !ended { kill(worker, SIGKILL) }   // the test's own leftover process
        }
    }

    /// `backup` into a symbolic link to an empty directory copied the whole store, then failed
    /// with `rename(…):` and no reason. It is refused at once, naming the link.
    @Test func backupIntoASymbolicLinkIsOneClearLine() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        try FileManager.default.createDirectory(atPath: dir.path("empty"), withIntermediateDirectories: false)
        let link = dir.path("link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.path("empty"))
        let run = try replay(["backup", "--store", store, link])
        #expect(run.status == 1 && run.stderrLines.count == 1 && run.stderr.contains("\(link) is a symbolic link"), "\(run)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == dir.path("empty"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["empty", "link", "store"])
    }

    // MARK: - Helpers

    /// Runs `replay`; a run still going after a bound far above any normal run is recorded as a
    /// hang, killed, and its blocked worker released by opening the FIFO `unblocking` for writing.
    private func replayBounded(_ arguments: [String], unblocking fifo: String) throws -> ReplayRun {
        let executable = try replayExecutable.get()
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("replay-bounded-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let handle = try FileHandle(forWritingTo: errors)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var waited = 0
        while process.isRunning && waited < 600 {
            usleep(100_000)
            waited += 1
        }
        if process.isRunning {
            Issue.record("replay \(arguments) hangs")
            let worker = childProcess(of: process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if let worker { kill(worker, SIGKILL) }
            // A process blocked opening the FIFO for reading is released by a writer.
            let fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd >= 0 { close(fd) }
        }
        return ReplayRun(arguments: arguments, status: process.terminationStatus, stdoutData: Data(),
                         stderr: String(decoding: try Data(contentsOf: errors), as: UTF8.self))
    }

    /// The first child process of `pid` (from /proc), waiting for it to appear.
    private func waitForChild(of pid: pid_t) -> pid_t? {
        for _ in 0..<600 {
            if let child = childProcess(of: pid) { return child }
            usleep(100_000)
        }
        return nil
    }

    /// A child process of `pid`, from /proc/PID/task/TID/children of each of its threads (the
    /// child is listed under the thread that spawned it).
    private func childProcess(of pid: pid_t) -> pid_t? {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for thread in threads {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/children", encoding: .utf8)) ?? ""
            if let child = text.split(separator: " ").compactMap({ pid_t($0) }).first { return child }
        }
        return nil
    }

    /// Whether `process` ended within a bound far above any normal exit (30 s), so that a hang
    /// fails the test instead of stalling the suite.
    private func waitBounded(_ process: Process) -> Bool {
        for _ in 0..<300 where process.isRunning { usleep(100_000) }
        if process.isRunning { return false }
        process.waitUntilExit()
        return true
    }

    /// Whether `pid` is gone (or a zombie) within a bound far above any normal exit.
    private func waitUntilGone(_ pid: pid_t) -> Bool {
        for _ in 0..<300 {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            // The state follows the command name in parentheses.
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
            usleep(100_000)
        }
        return false
    }
}
