import Foundation
import TestSupport
import Testing
@_spi(RawLog) @testable import EventStoreLMDB
import LMDB

/// The App Group option (`LMDBEnvironmentOptions.semaphorePrefix`): an app and its widget open
/// one store at once through LMDB's POSIX semaphores named under the group's prefix.
@Suite(.serialized) struct AppGroupTests {
    static let prefix = "group.test.reading"

    /// The two semaphore names LMDB stored in `lock.mdb` (its reader-table header: magic and
    /// format, then the reader semaphore's name at byte 8; the writer's at byte 64, the next
    /// cache line), NUL-terminated in 32 bytes each.
    func semaphoreNames(_ store: URL) throws -> [String] {
        let header = [UInt8](try Data(contentsOf: store.appendingPathComponent("lock.mdb")).prefix(96))
        return [8, 64].map { offset in String(decoding: header[offset..<offset + 32].prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Whether the semaphore `name` exists (glibc keeps it as /dev/shm/sem.NAME).
    func semaphoreExists(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: "/dev/shm/sem." + name)
    }

    @Test(arguments: [
        ("", "it is empty"),
        ("group.com.example.reading.widget", "it is 32 bytes, more than 24"),
        ("group/reading", "it contains '/'"),
        ("group\u{0}x", "it contains a NUL byte"),
    ])
    func aPrefixBreakingTheRuleIsRefusedNamingTheFieldAndNothingIsWritten(prefix: String, rule: String) throws {
        try withTempDirectory { dir in
            let store = dir.child("store")
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            let error = #expect(throws: LMDBError.self) {
                _ = try EventLog.open(at: store, options: LMDBEnvironmentOptions(semaphorePrefix: prefix))
            }
            #expect(error?.kind == .system)
            #expect(error?.code == EINVAL)
            #expect(error?.message.contains("semaphorePrefix") == true)
            #expect(error?.message.contains(rule) == true, "\(error?.message ?? "")")
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.path).isEmpty)
        }
    }

    @Test(.enabled(if: LMDBEnvironment.usesPOSIXSemaphores, "only the vendored LMDB locks with named semaphores"))
    func anAppAndItsWidgetWriteOneStoreAtOnceUnderTheGroupPrefix() throws {
        try withTempDirectory { dir in
            let store = dir.child("store")
            let options = LMDBEnvironmentOptions(semaphorePrefix: Self.prefix)
            let count = 400
            var names: [String] = []
            do {
                let app = try EventLog.open(at: store, options: options)
                // The names LMDB chose carry the prefix: "<prefix>.r<hash>" and "<prefix>.w<hash>",
                // at most 31 bytes (on Apple platforms "<prefix>/r<hash>").
                names = try semaphoreNames(store)
                #expect(names[0].hasPrefix(Self.prefix + ".r"), "\(names)")
                #expect(names[1].hasPrefix(Self.prefix + ".w"), "\(names)")
                #expect(names.allSatisfy { $0.utf8.count <= 31 && semaphoreExists($0) })

                // The widget: a second real process, same store, same prefix, writing while the
                // app writes too.
                let widget = try HelperProcess([
                    "append-batches", store.path, "--count", "\(count)", "--batch", "4",
                    "--stream", "widget", "--prefix", "widget", "--semaphore-prefix", Self.prefix,
                ])
                var appended = 0
                while appended < count {
                    let batch = (appended..<appended + 4).map { NewEvent(eventID: deterministicID(prefix: "app", index: $0), payload: [1]) }
                    try app.append(batch, to: "app")
                    appended += 4
                }
                #expect(widget.waitForExit() == 0)
                let events = try app.read()
                #expect(events.map(\.position) == Array(1...UInt64(2 * count)))
                #expect(try app.readStream("widget").count == count)
                #expect(try app.readStream("app").count == count)
                #expect(try app.verify().isIntact)
            }
            // The last process to close removes the semaphores.
            #expect(names.count == 2 && names.allSatisfy { !semaphoreExists($0) })
        }
    }

    /// An app killed by the system in the middle of a write (iOS ends apps and widgets at any
    /// moment) must not leave the store unwritable for the process that goes on (the widget, or
    /// the app started again while the widget still has the store open).
    @Test func aWriterKilledInItsTransactionLeavesTheStoreWritableForTheOtherProcess() async throws {
        try await withTempDirectory { dir in
            let store = dir.child("store")
            let options = LMDBEnvironmentOptions(semaphorePrefix: Self.prefix)
            let app = try EventLog.open(at: store, options: options)
            let widget = try HelperProcess(["hold-write", store.path, "--semaphore-prefix", Self.prefix])
            #expect(await widget.waitForLine(timeout: .seconds(60)) { $0 == "writing" })
            widget.kill9()
            #expect(widget.waitForExit() == SIGKILL)
            // The append runs on its own thread: if it never returns, the test says so instead of hanging.
            let done = DispatchSemaphore(value: 0)
            let outcome = Locked<Result<UInt64, any Error>?>(nil)
            Thread.detachNewThread {
                let result = Result { try app.append([NewEvent(payload: [7])], to: "app").positions.last ?? 0 }
                outcome.withLock { $0 = result }
                done.signal()
            }
            let finished = done.wait(timeout: .now() + .seconds(60)) == .success
            #expect(finished, "the append waited for the killed process's writer lock")
            #expect(try outcome.withLock { $0 }?.get() == 1)
        }
    }
}
