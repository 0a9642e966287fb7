@_spi(RawLog) import EventStoreLMDB
import Foundation
import TestSupport
import ReadingEvents
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The store-side items of the issue "Hardening", through the built `replay` binary: short data
/// files, backups, `verify` that only reads, and stores on read-only media.
@Suite struct StoreHardeningCLITests {
    /// A short `data.mdb` (a backup killed mid-copy, a truncated file) made seven subcommands die
    /// with SIGBUS and two print a crash backtrace. Every one now exits 1 with one line.
    @Test func aShortDataFileGivesOneLineAndNoSignalInEverySubcommand() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        let exported = dir.child("export.jsonl")
        try replayOK(["export", "--store", store]).stdoutData.write(to: exported)
        let file = dir.child("store/data.mdb").path
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(truncate(file, off_t(size / 2 / 4096 * 4096)) == 0)
        let commands: [[String]] = [
            ["stats"], ["show"], ["audit"], ["rebuild"], ["backup", dir.path("copy")], ["import", exported.path],
            ["verify"], ["export"],
        ]
        for command in commands {
            let run = try replayRaw([command[0], "--store", store] + command.dropFirst())
            #expect(!run.died, "\(command) died by signal \(run.status)")
            #expect(run.status == 1, "\(command): \(run.status) \(run.stderr)")
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(command) printed \(lines.count) lines on stderr: \(run.stderr.prefix(400))")
            #expect(run.stderr.contains("damaged or incomplete"), "\(command): \(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("copy")))
    }

    /// `backup` under `umask 000` wrote a 0666 `data.mdb` and left an existing destination at its
    /// mode; now the copy is 0600 in a 0700 directory, renamed into place when complete.
    @Test func backupIsPrivateUnderAnyUmask() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let last = try makeDemoStore(at: store)
        let existing = dir.child("backups/existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for destination in [existing.path, dir.path("backups/new")] {
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", "umask 000; exec \"$0\" backup --store \"$1\" \"$2\"", try replayExecutable.get().path, store, destination]
            shell.standardOutput = FileHandle.nullDevice
            try shell.run()
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0)
            #expect(try mode(destination) == 0o700)
            #expect(try mode(destination + "/data.mdb") == 0o600)
            #expect(try lastPosition(of: destination) == last)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("backups")).sorted() == ["existing", "new"])
        // Onto a file: one clear line, exit 1, the file untouched.
        try Data("keep".utf8).write(to: dir.child("file"))
        let run = try replay(["backup", "--store", store, dir.path("file")])
        #expect(run.status == 1 && run.stderrLines.count == 1 && run.stderr.contains("is a file"), "\(run)")
        #expect(try Data(contentsOf: dir.child("file")) == Data("keep".utf8))
    }

    /// `verify` folded lagging views before checking them, so it could not see views that a
    /// crash or a bug emptied. It now opens the store read-only and changes no byte.
    @Test func verifyOnlyReadsAndSeesEmptiedViews() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let last = try makeDemoStore(at: store)
        let data = dir.child("store/data.mdb")
        let before = try Data(contentsOf: data)
        try replayOK(["verify", "--store", store])
        #expect(try Data(contentsOf: data) == before, "verify changed data.mdb")
        // What two racing rebuilds left behind: the active generation switched to an empty one.
        do {
            let log = try EventLog.open(at: URL(fileURLWithPath: store))
            let meta = try log.openDatabase(named: "views.meta", keys: UTF8String.self, values: RawBytes.self)
            try log.environment.write { txn in try txn.put(meta, "generation", [1]) }
        }
        let emptied = try Data(contentsOf: data)
        let run = try replay(["verify", "--store", store, "--json"])
        #expect(run.status == 1, "\(run)")
        let report = try run.jsonObject()
        #expect(report["viewLag"] as? Int == last)
        #expect(try Data(contentsOf: data) == emptied, "verify changed data.mdb")
        // A writable open folds the views again, and verify is satisfied.
        try replayOK(["rebuild", "--store", store])
        #expect(try verifyReport(of: store)["ok"] as? Bool == true)
    }

    /// A store on read-only media could not even be verified or exported. The commands that
    /// only read now work there; the ones that write fail with one line.
    @Test func theReadCommandsWorkOnReadOnlyMedia() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let mountPoint = dir.child("media")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", mountPoint.path]) else {
            print("RELIABILITY read-only media: SKIPPED: mount -t tmpfs is not permitted here")
            return
        }
        defer { _ = run("/bin/umount", [mountPoint.path]) }
        let store = mountPoint.appendingPathComponent("store").path
        let last = try makeDemoStore(at: store)
        #expect(run("/bin/mount", ["-o", "remount,ro", mountPoint.path]))
        let reader = try replayOK(["stats", "--store", store, "--json"]).jsonObject()["eventsPerReader"] as? [String: Int]
        let someReader = try #require(reader?.keys.sorted().first)
        #expect(try verifyReport(of: store)["lastPosition"] as? Int == last)
        #expect(try replayOK(["export", "--store", store]).stdoutLines.count == last)
        try replayOK(["audit", "--store", store, "--reader", someReader])
        try replayOK(["show", "--store", store, "--reader", someReader])
        try replayOK(["backup", "--store", store, dir.path("copy")])
        #expect(try lastPosition(of: dir.path("copy")) == last)
        let rebuild = try replay(["rebuild", "--store", store])
        #expect(rebuild.status == 1 && rebuild.stderrLines.count == 1, "\(rebuild)")
    }

    /// `replay export | head -1`: the export's child dies of SIGPIPE when `head` exits; that is the
    /// reader going away, not a damaged data file, and says nothing on stderr.
    @Test func aClosedPipeIsNotReportedAsDamage() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try replayOK(["demo", "--store", store, "--quiet", "--readers", "2", "--days", "200"])
        let errors = dir.child("stderr")
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "\"$0\" export --store \"$1\" 2>\"$2\" | head -c 10 >/dev/null",
                           try replayExecutable.get().path, store, errors.path]
        try shell.run()
        shell.waitUntilExit()
        let stderr = try String(contentsOf: errors, encoding: .utf8)
        #expect(!stderr.contains("damaged"), "\(stderr)")
        #expect(stderr.isEmpty, "\(stderr)")
    }

    private func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    private func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return false }
        process.waitUntilExit()
        return process.terminationReason == .exit && process.terminationStatus == 0
    }
}
