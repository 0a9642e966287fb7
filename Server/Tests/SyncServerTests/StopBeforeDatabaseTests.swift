import Foundation
import Testing

@Suite("Stopping a server that has not reached PostgreSQL")
struct StopBeforeDatabaseTests {
    /// A server started while PostgreSQL is unreachable waits in its migrations for a connection.
    /// SIGTERM began a graceful shutdown that waited for that start for ever: the server ran until
    /// it was killed (3 of 3 runs still alive 25 s after SIGTERM), so a `systemctl stop` or
    /// `docker stop` of a deployment whose database was down waited for its own SIGKILL. The
    /// migrations' wait now ends at the stop (and any graceful shutdown is escalated to
    /// cancellation after 10 s): the server exits at once, with status 0 and one line saying that
    /// it stopped before the schema was ready, not the pool's `ConnectionPoolError(poolShutdown)`.
    @Test(arguments: [SIGTERM, SIGINT])
    func aServerWaitingForAnUnreachableDatabaseEndsAtTheStop(signal: Int32) throws {
        let executable = try #require(builtExecutable(named: "reading-sync-server"), "not built beside the tests")
        // A port nothing listens on: every connection attempt is refused at once.
        let closedPort = try freeLoopbackPort()
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--database-url", "postgres://sync:sync@127.0.0.1:\(closedPort)/sync", "--port", "0",
                             "--log-level", "warning"]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Long enough for the server to be inside its migrations, retrying the connection.
        Thread.sleep(forTimeInterval: 2)
        #expect(process.isRunning, "the server exited before SIGTERM (status \(process.terminationStatus))")
        let stopped = Date()
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(25)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        try #require(!process.isRunning, "the server still ran 25 s after signal \(signal)")
        // Before the escalation's 10 s: the wait itself ended.
        #expect(Date().timeIntervalSince(stopped) < 5, "the server took \(Date().timeIntervalSince(stopped)) s to stop")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "ended with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus)")
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("stopped before the schema was ready"), "stderr: \(stderr)")
        #expect(!stderr.contains("Error"), "stderr: \(stderr)")
    }
}
