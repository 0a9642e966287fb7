import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 26: `replay import-from` streams, so its memory grows by less than the 200,000-row budget
/// allows (512 MiB for 200,000 Goodreads rows: 2,684 bytes a row). The CI run measures the child's
/// own peak resident set (its `VmHWM`) at 5,000 and at 20,000 rows and bounds the growth
/// per row; `Scripts/import-memory.sh` measures the full 200,000 rows of a release build.
@Suite(.serialized) struct ImportMemoryCLITests {
    /// A Goodreads export of `rows` rows, as `Scripts/import-memory.sh` makes it.
    static func export(rows: Int) -> String {
        var text = "Book Id,Title,Author,Additional Authors,ISBN13,My Rating,Publisher,Number of Pages,Date Read,Date Added,Exclusive Shelf,My Review,Private Notes,Read Count\n"
        for i in 1...rows {
            let d = 1 + i % 28, m = 1 + i % 12, y = 2010 + i % 15
            let shelf = i % 3 == 0 ? "read" : i % 3 == 1 ? "to-read" : "currently-reading"
            let read = shelf == "read" ? String(format: "%d/%02d/%02d", y, m, d) : ""
            let rating = shelf == "read" ? i % 5 + 1 : 0
            let review = i % 7 == 0 ? "A review of book \(i)" : ""
            text += "\(100_000 + i),Book number \(i),Author \(i % 5000),,,\(rating),Publisher,\(100 + i % 400),\(read),\(String(format: "%d/%02d/%02d", y, m, d)),\(shelf),\(review),,1\n"
        }
        return text
    }

    /// Runs the built `replay` with `arguments` as a child of this process and returns its exit
    /// status, its peak resident set in KiB and its stdout.
    ///
    /// The peak is the child's own `VmHWM` (`/proc/PID/status`), read every 20 ms while it runs
    /// (it only grows, so the last reading is the peak up to its last 20 ms), not `wait4`'s
    /// `ru_maxrss`: `posix_spawn` runs the child on this process's memory until its `exec`, and
    /// Linux then counts this process's own peak (the test process's, other suites' tests
    /// included) in the child's `ru_maxrss`, which once read 273 MiB for an import of 92.
    func measure(_ arguments: [String], in dir: CLITempDirectory) throws -> (status: Int32, peakKiB: Int, stdout: String) {
        let executable = try replayExecutable.get().path
        let out = dir.path("stdout-\(UUID().uuidString)"), err = dir.path("stderr-\(UUID().uuidString)")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        try #require(spawned == 0, "posix_spawn: \(String(cString: strerror(spawned)))")
        var status: Int32 = 0
        var peakKiB = 0
        while true {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid { break }
            try #require(waited == 0 || errno == EINTR, "waitpid: \(String(cString: strerror(errno)))")
            if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
               let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) {
                peakKiB = max(peakKiB, kib)
            }
            usleep(20_000)
        }
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        let exited = status & 0x7F == 0
        try #require(exited, "replay died by signal \(status & 0x7F): \(stderr)")
        return ((status >> 8) & 0xFF, peakKiB, stdout)
    }

    @Test func peakMemoryGrowsByLessThanTheBudgetPerRow() throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let reader = "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13"
        var peaks: [Int: Int] = [:]
        for rows in [5_000, 20_000] {
            let file = dir.child("export-\(rows).csv")
            try Data(Self.export(rows: rows).utf8).write(to: file)
            let run = try measure(["import-from", "goodreads", file.path, "--reader", reader, "--zone", "Asia/Seoul",
                                   "--store", dir.path("store-\(rows)")], in: dir)
            #expect(run.status == 0, "\(run.stdout.suffix(500))")
            let summary = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
            #expect(summary.contains("(\(rows) rows, "), "\(summary)")
            #expect(summary.contains(" rows/s); 0 rows skipped"), "\(summary)")
            peaks[rows] = run.peakKiB
            print("IMPORT-MEMORY rows=\(rows) peakRSS=\(run.peakKiB / 1024) MiB: \(summary)")
        }
        let perRow = Double(peaks[20_000]! - peaks[5_000]!) * 1024 / 15_000
        print("IMPORT-MEMORY growth \(Int(perRow)) bytes per row (budget \(512 * 1024 * 1024 / 200_000))")
        #expect(perRow <= Double(512 * 1024 * 1024) / 200_000, "peak RSS grew \(Int(perRow)) bytes a row: \(peaks)")
    }
}
