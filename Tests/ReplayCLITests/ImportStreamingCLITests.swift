import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 36: `replay import` read its whole JSON Lines file into memory before looking at a line
/// (4.8 GB for 1M events). It now reads the file as a stream, a line at a time through a bounded
/// buffer. A FIFO shows it: a reader that waits for the end of the file cannot answer while the
/// writer holds the FIFO open, a streaming one refuses a bad line as soon as it reads it.
/// (`Scripts/import-memory.sh jsonl 1000000` measures the memory of a release build.)
@Suite struct ImportStreamingCLITests {
    typealias H = HardeningCLITests

    /// Starts `replay import` on a FIFO, writes `text` into it and keeps the FIFO open for up to
    /// `seconds`; returns whether replay exited while the FIFO was still open, its status and stderr.
    func importFromOpenFIFO(_ text: String, store: String, in dir: CLITempDirectory,
                            seconds: Double = 60) throws -> (exitedBeforeEOF: Bool, status: Int32, stderr: String) {
        let fifo = dir.path("in-\(UUID().uuidString).jsonl")
        try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
        let process = Process()
        process.executableURL = try replayExecutable.get()
        process.arguments = ["import", "--store", store, fifo]
        let errFile = dir.child("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Open the FIFO for writing once replay has opened it for reading (never block on it).
        let deadline = Date().addingTimeInterval(seconds)
        var writer: Int32 = -1
        while writer < 0 && Date() < deadline && process.isRunning {
            writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer < 0 { usleep(10_000) }
        }
        try #require(writer >= 0, "replay never opened the FIFO")
        _ = fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) & ~O_NONBLOCK)
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        #expect(written == bytes.count)
        // The FIFO stays open: no end of file until replay has answered or the time is up.
        while process.isRunning && Date() < deadline { usleep(20_000) }
        let exitedBeforeEOF = !process.isRunning
        close(writer)
        if !exitedBeforeEOF { process.terminate() }
        process.waitUntilExit()
        let stderr = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
        return (exitedBeforeEOF, process.terminationStatus, stderr)
    }

    /// A line that is not JSON, the second of a file whose writer has not finished: refused at
    /// once, naming line 2, nothing imported and no store created.
    @Test func aBadLineIsRefusedBeforeTheFileEnds() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let run = try importFromOpenFIFO(try H.bookAdded() + "\n" + "{not json\n", store: store, in: dir)
        #expect(run.exitedBeforeEOF, "replay import waited for the end of the file before reading its lines: \(run.stderr)")
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line 2: ") && run.stderr.contains("nothing was imported"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store), "\(run)")
    }

    /// A history larger than the map a new store starts with (16 MiB: the write transaction runs
    /// again on a larger map, reading the lines again), imported from a file and from stdin (copied
    /// aside as it is read): every event is stored, once. (Lines in several batches: the next test.)
    @Test func aLargeImportFromStdinAndAFileHoldsEveryEvent() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        var lines = [try H.bookAdded()]
        for i in 0..<2_000 {
            let text = "memo \(i) " + String(repeating: "abcdefghij", count: 900)
            lines.append(try H.line("MemoWritten", data: ["memo": UUID().uuidString.lowercased(), "book": H.book, "text": text],
                                    occurred: "2025-03-01T10:\(String(format: "%02d", i / 100 % 60)):00.000000Z"))
        }
        let text = Data((lines.joined(separator: "\n") + "\n").utf8)
        try #require(text.count > 18 << 20)
        let file = dir.child("events.jsonl")
        try text.write(to: file)
        let count = lines.count
        let fromFile = try replay(["import", "--store", dir.path("from-file"), file.path])
        #expect(fromFile.status == 0, "\(fromFile)")
        #expect(fromFile.stdout.contains("imported \(count) new events of \(count) from"), "\(fromFile)")
        let fromStdin = try replay(["import", "--store", dir.path("from-stdin"), "-"], stdin: text)
        #expect(fromStdin.status == 0, "\(fromStdin)")
        #expect(fromStdin.stdout.contains("imported \(count) new events of \(count) from - (0 already stored)"), "\(fromStdin)")
        let again = try replay(["import", "--store", dir.path("from-stdin"), "-"], stdin: text)
        #expect(again.stdout.contains("imported 0 new events of \(count) from - (\(count) already stored)"), "\(again)")
        for store in ["from-file", "from-stdin"] {
            #expect(try lastPosition(of: dir.path(store)) == count)
            let verify = try replay(["verify", "--store", dir.path(store)])
            #expect(verify.status == 0, "\(verify)")
        }
    }

    /// The same event ID with another fact, 5,000 lines apart (in another batch of lines): refused,
    /// naming the later line, nothing imported and no store left behind.
    @Test func aConflictInALaterBatchRefusesTheWholeFile() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let id = UUID().uuidString.lowercased()
        var lines = [try H.bookAdded(), try H.pagesRead(10, id: id)]
        for i in 0..<5_000 {
            lines.append(try H.line("MemoWritten", data: ["memo": UUID().uuidString.lowercased(), "book": H.book, "text": "memo \(i)"]))
        }
        lines.append(try H.pagesRead(12, id: id))
        let run = try H.importLines(lines, into: store, in: dir)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line \(lines.count): event \(id)") && run.stderr.contains("nothing was imported"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: store), "\(run)")
    }
}
