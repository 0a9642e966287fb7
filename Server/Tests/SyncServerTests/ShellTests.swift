import Foundation
import Testing

@Suite("Test support: the commands and waits of the server tests")
struct ShellTests {
    /// psql's rows are parsed from standard output; a complaint on standard error (as psql's about
    /// a working directory it cannot enter) must not land among them.
    @Test func standardErrorStaysOutOfTheOutputThatIsParsed() throws {
        let output = try runCommand(["sh", "-c", "echo 42; echo 'could not change directory' >&2; echo 43"])
        #expect(output == "42\n43\n")
    }

    /// A failing command's error shows both streams and its status.
    @Test func aFailingCommandReportsItsStatusAndStandardError() throws {
        let error = try #require(throws: CommandError.self) {
            try runCommand(["sh", "-c", "echo partial; echo 'the reason' >&2; exit 3"])
        }
        #expect(error.status == 3)
        #expect(error.output.contains("partial"))
        #expect(error.output.contains("the reason"))
    }

    /// The program starts in the directory it is given, not in the test process's.
    @Test func aCommandStartsInTheDirectoryItIsGiven() throws {
        let directory = try makeTemporaryDirectory("cwd")
        defer { try? FileManager.default.removeItem(at: directory) }
        let real = try #require(realpath(directory.path, nil))
        defer { free(real) }
        #expect(try runCommand(["pwd", "-P"], in: directory.path) == String(cString: real) + "\n")
        #expect(try runCommand(["pwd", "-P"]) == "/\n")
    }

    /// A command that has not ended within its time limit is killed, and the error says what was
    /// awaited.
    @Test func aCommandOverItsTimeLimitIsKilledAndNamed() throws {
        let error = try #require(throws: CommandError.self) {
            try runCommand(["sleep", "600"], timeLimit: .milliseconds(200))
        }
        #expect(error.description.contains("`sleep 600` to exit"))
        #expect(error.description.contains("gave up after"))
    }

    /// A condition that never holds ends the wait with an error naming it.
    @Test func aWaitThatNeverEndsFailsNamingWhatItWaitedFor() async throws {
        let error = try await #require(throws: WaitTimeout.self) {
            try await waitUntil("the first pushed batch to be stored", timeLimit: .milliseconds(100)) { false }
        }
        #expect(error.description == "gave up after 0.1 seconds waiting for the first pushed batch to be stored")
    }
}
