import Foundation
import LMDB
import Testing
import TestSupport
@testable import EventStoreLMDB

/// `replay stats` (and every command that reads a store) on a directory whose `data.mdb` is an
/// LMDB environment without an event log (empty, or another program's) refuses it in one line and
/// writes nothing into it. Before: `stats` made it into a store, writing 41 databases (issue 36).
@Suite struct ForeignEnvironmentTests {
    static func checksums(_ directory: URL) throws -> [String: Data] {
        var sums: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            sums[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return sums
    }

    @Test(arguments: [["stats"], ["show"], ["audit"], ["export"],
                      // A new device's sync creates a store in a new or empty directory only
                      // (issue 38), never in another program's environment or an empty one.
                      ["sync", "run", "--server", "http://127.0.0.1:1", "--token", "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13.secret"]])
    func aReadCommandNeverWritesIntoAnEnvironmentThatIsNotAStore(command: [String]) throws {
        try withTempDirectory { dir in
            let foreign = dir.child("foreign")
            try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
            // Another program's environment: one named database of its own; and an empty one.
            do {
                let environment = try LMDBEnvironment(directory: foreign)
                let table = try environment.openDatabase(named: "theirs", keys: UTF8String.self, values: RawBytes.self, create: true)
                try environment.write { txn in try txn.put(table, "key", [1, 2, 3]) }
            }
            let empty = dir.child("empty")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            do { _ = try LMDBEnvironment(directory: empty) }
            let replay = try #require(builtExecutable(named: "replay").url)
            for directory in [foreign, empty] {
                let before = try Self.checksums(directory)
                let process = Process()
                process.executableURL = replay
                process.arguments = command + ["--store", directory.path]
                let errors = Pipe()
                process.standardError = errors
                process.standardOutput = Pipe()
                try process.run()
                let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(process.terminationReason == .exit && process.terminationStatus != 0, "\(command) on \(directory.lastPathComponent): \(stderr)")
                #expect(stderr.split(separator: "\n").count == 1, "\(stderr)")
                #expect(try Self.checksums(directory)["data.mdb"] == before["data.mdb"], "\(command) wrote into \(directory.lastPathComponent)/data.mdb")
            }
        }
    }
}
