import Foundation
import Testing

@Suite("Stopping a server that has not reached PostgreSQL")
struct StopBeforeDatabaseTests {
    /// A server started while PostgreSQL is unreachable waits in its migrations for a connection.
    /// SIGTERM began a graceful shutdown that waited for that start for ever: the server ran until
    /// it was killed (3 of 3 runs still alive 25 s after SIGTERM), so a `systemctl stop` or
    /// `docker stop` of a deployment whose database was down waited for its own SIGKILL. The
    /// graceful shutdown is now escalated to cancellation after 10 s, and the server exits.
    @Test func aServerWaitingForAnUnreachableDatabaseEndsOnSIGTERM() throws {
        let executable = try #require(builtExecutable(named: "reading-sync-server"), "not built beside the tests")
        // A port nothing listens on: every connection attempt is refused at once.
        let closedPort = try freeLoopbackPort()
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--database-url", "postgres://sync:sync@127.0.0.1:\(closedPort)/sync", "--port", "0",
                             "--log-level", "critical"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Long enough for the server to be inside its migrations, retrying the connection.
        Thread.sleep(forTimeInterval: 2)
        #expect(process.isRunning, "the server exited before SIGTERM (status \(process.terminationStatus))")
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(25)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!process.isRunning, "the server still ran 25 s after SIGTERM")
    }
}
