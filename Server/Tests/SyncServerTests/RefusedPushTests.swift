import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("A record the server refuses never stalls the device", needsPostgres)
struct RefusedPushTests {
    /// The tablet holds one record whose (replica, sequence) the server already holds for another
    /// event (a partner's record copied, a forged copy): the server refuses it (409
    /// `origin_taken`). The tablet's sync pushes everything else, keeps that record aside with
    /// the reason, still pulls (the server's event under that origin lands in the tablet's
    /// quarantine), and does not send the refused record again unless asked.
    @Test func aStoreHoldingARefusedRecordPushesTheRestAndStillPulls() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("refused")
        defer { try? FileManager.default.removeItem(at: root) }
        let reader = UUID()
        let history = syntheticHistory(reader: reader, count: 30, seed: 81)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        // On the server: an event of replica X, sequence 1.
        let foreign = stamped(Array(history.prefix(1)), seed: 82)[0]
        #expect(try await phone.push([foreign]).status == 200)

        // The tablet: its own 29 events, and another event under the same (X, 1), taken by merge.
        let tablet = try ReadingStore.open(at: root.appendingPathComponent("tablet"))
        try tablet.importHistory(Array(history.dropFirst(2)).map { var e = $0; e.origin = nil; return e })
        var clash = history[1]
        // Its own stamp (within the stamp rule), the (replica, sequence) of the server's event.
        clash.origin = EventOrigin(stamp: UInt64(clash.recordedAt.microseconds), replica: foreign.origin!.replica, sequence: foreign.origin!.sequence)
        #expect(try tablet.merge([clash]).appended == 1)

        let registration = try await SyncClient.register(server: server, reader: ReaderID(reader), deviceName: "tablet",
                                                         token: phone.token)
        let client = try SyncClient(store: tablet, server: server, token: registration.token, pushBatch: 7)
        let report = try await client.sync()
        #expect(report.pushed == 28)
        #expect(report.refused.map(\.eventID) == [clash.eventID])
        #expect(report.refused.first?.status == 409)
        #expect(report.refused.first?.code == "origin_taken")
        #expect(report.pulled.quarantined == 1, "the server's event under the clashing origin is quarantined, the rest merged")
        #expect(try fixture.storedEventCount() == 29)
        #expect(try client.refusedRecords() == report.refused)
        #expect(report.description.contains("1 refused by the server"), "\(report)")

        // A later sync sends nothing again; the list stays.
        let again = try await client.sync()
        #expect(again.pushed == 0)
        #expect(again.pushedDuplicates == 0, "the refused record is not sent on every sync")
        #expect(again.refused.isEmpty)
        #expect(try client.refusedRecords().map(\.eventID) == [clash.eventID])
        // Asked to retry: sent once more, still refused, still listed once.
        let retried = try await client.sync(retryingRefused: true)
        #expect(retried.refused.map(\.eventID) == [clash.eventID])
        #expect(try client.refusedRecords().count == 1)
        #expect(try fixture.storedEventCount() == 29)
        // The tablet's new events still go.
        _ = try tablet.execute(.addBook(BookMetadata(title: "Later", pageCount: 120), status: .reading), book: BookID(),
                               context: CommandContext(reader: ReaderID(reader), occurredAt: Timestamp(Date()), timeZone: "UTC"))
        #expect(try await client.sync().pushed == 1)
    }
}
