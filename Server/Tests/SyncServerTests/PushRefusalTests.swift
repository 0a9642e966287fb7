import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("Push-time refusal: what every receiver would refuse never reaches the database", needsPostgres)
struct PushRefusalTests {
    /// The first event of `events` whose payload is a `PagesRead`, with its index.
    func pagesRead(_ events: [EventEnvelope]) throws -> (index: Int, envelope: EventEnvelope, payload: PagesRead) {
        let index = try #require(events.firstIndex { if case .pagesRead = $0.event { true } else { false } })
        guard case .pagesRead(let payload) = events[index].event else { throw CommandError(command: ["pagesRead"], status: 1, output: "") }
        return (index, events[index], payload)
    }

    @Test func recordsWithoutAValidOriginStreamOrValueAre400NamingTheFieldAndTheRule() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 40, seed: 51)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let (pagesIndex, pages, payload) = try pagesRead(events)
        var generator = SeededGenerator(seed: 51)

        // Each broken record sits at a random place of an otherwise valid batch. These decode,
        // and every receiver's `validateReplicated()` refuses them: so does the server.
        var cases: [(name: String, envelope: EventEnvelope, field: String, rule: ValidationRule?)] = []
        var noOrigin = pages
        noOrigin.origin = nil
        cases.append(("no origin", noOrigin, "origin", .empty))
        var provisional = pages
        provisional.origin?.replica = .provisional   // the codec leaves a provisional origin out
        cases.append(("provisional replica", provisional, "origin", .empty))
        var otherBook = pages
        otherBook.stream = .book(reader: ReaderID(reader), book: BookID())
        cases.append(("stream of another book", otherBook, "stream", .inconsistent))
        var recordedBefore = pages
        recordedBefore.occurredAt = Timestamp(microseconds: pages.recordedAt.microseconds + 1)
        cases.append(("occurred after it was recorded", recordedBefore, "occurredAt", .inconsistent))
        // These the record's decoding already refuses (`malformed_record`, no rule).
        var sequenceZero = pages
        sequenceZero.origin?.sequence = 0
        cases.append(("sequence 0", sequenceZero, "sequence", nil))
        var tooFar = pages
        tooFar.event = .pagesRead(PagesRead(book: payload.book, position: BookMetadata.maxPageCount + 1))
        cases.append(("position beyond any book", tooFar, "data.position", nil))

        for (name, broken, field, rule) in cases {
            var batch = events
            batch.remove(at: pagesIndex)
            let at = Int.random(in: 0...batch.count, using: &generator)
            batch.insert(broken, at: at)
            let reply = try await phone.push(batch)
            #expect(reply.status == 400, "\(name): \(reply.text)")
            #expect(reply.error == (rule == nil ? "malformed_record" : "invalid_record"), "\(name)")
            #expect(reply.field == "events[\(at)].record.\(field)", "\(name): \(reply.text)")
            #expect(reply.json["rule"] as? String == rule?.rawValue, "\(name): \(reply.text)")
            #expect(try fixture.storedEventCount() == 0, "\(name): nothing of the batch is stored")
        }
        #expect(try await phone.push(events).status == 200)
        #expect(try fixture.storedEventCount() == events.count)
    }

    @Test func aReplicasSequenceNamesOneEventPerReaderAndTheSameEventAgainIsADuplicate() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 20, seed: 52)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        #expect(try await phone.push(Array(events.prefix(10))).status == 200)

        // A new event ID under a stored event's (replica, sequence): a copied store's record (its
        // own stamp, which keeps the stamp rule, so that only the origin rule refuses it).
        var copy = events[12]
        copy.origin = EventOrigin(stamp: copy.origin?.stamp ?? UInt64(copy.recordedAt.microseconds), replica: events[3].origin!.replica, sequence: events[3].origin!.sequence)
        let reply = try await phone.push([events[10], copy])
        #expect(reply.status == 409, "\(reply.text)")
        #expect(reply.error == "origin_taken")
        #expect(reply.field == "events[1].record.origin.sequence")
        #expect(try fixture.storedEventCount() == 10)
        // Two new events of one batch under one (replica, sequence).
        var twin = events[13]
        twin.origin = EventOrigin(stamp: twin.origin?.stamp ?? UInt64(twin.recordedAt.microseconds), replica: events[12].origin!.replica, sequence: events[12].origin!.sequence)
        let inBatch = try await phone.push([events[12], events[11], twin])
        #expect(inBatch.status == 409, "\(inBatch.text)")
        #expect(inBatch.field == "events[2].record.origin.sequence")
        #expect(try fixture.storedEventCount() == 10)
        // The same events again are duplicates, not conflicts.
        let again = try await phone.push(Array(events.prefix(12)))
        #expect(again.status == 200, "\(again.text)")
        #expect(again.json["stored"] as? Int == 2)
        #expect(again.json["duplicates"] as? Int == 10)
        // Another device of the reader copying the same origin is refused too.
        let tablet = try await phone.registerAnother()
        #expect(try await tablet.push([copy]).status == 409)
        #expect(try fixture.storedEventCount() == 12)
    }

    /// Two devices of one reader push, at the same time, different events under the same
    /// (replica, sequence) (a copied store and its original): one is stored, the other is 409,
    /// never a 5xx, whichever commits first.
    @Test func concurrentPushesOfOneSequenceStoreOneAndRefuseTheOther() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 60, seed: 54)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let tablet = try await phone.registerAnother()
        var byIndex = 0
        for pair in 0..<30 {
            var copy = events[30 + pair]
            copy.origin = EventOrigin(stamp: copy.origin?.stamp ?? UInt64(copy.recordedAt.microseconds), replica: events[pair].origin!.replica, sequence: events[pair].origin!.sequence)
            async let first = phone.push([events[pair]])
            async let second = tablet.push([copy])
            let replies = try await [first, second]
            #expect(replies.map(\.status).sorted() == [200, 409], "pair \(pair): \(replies.map(\.text))")
            if replies.contains(where: { $0.status == 409 && $0.field == "events" }) { byIndex += 1 }
        }
        #expect(try fixture.storedEventCount() == 30)
        print("concurrent pushes of one (replica, sequence): 30 pairs, \(byIndex) refused by the unique index (the race), the rest by the push's look-up")
    }

    /// Bob copies a record Alice shares with him (its replica and sequence) into an event of his
    /// own, and pushes records without a valid origin: each is refused, and neither reader's
    /// sync stops (before, the server stored them and every pull of Alice's failed at that page).
    @Test func aPartnersBadRecordCanNoLongerBlockTheOtherReadersSync() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("refusal")
        defer { try? FileManager.default.removeItem(at: root) }
        let histories = demoHistories(readers: 2, days: 30, seed: 53, stamped: false)
        let (alice, bob) = (ReaderID(histories[0].reader), ReaderID(histories[1].reader))
        let aliceStore = try ReadingStore.open(at: root.appendingPathComponent("alice"))
        let bobStore = try ReadingStore.open(at: root.appendingPathComponent("bob"))
        try aliceStore.appendRecorded(histories[0].events)
        try bobStore.appendRecorded(histories[1].events)
        let regA = try await SyncClient.register(server: server, reader: alice, deviceName: "alice")
        let regB = try await SyncClient.register(server: server, reader: bob, deviceName: "bob")
        let aliceClient = try SyncClient(store: aliceStore, server: server, token: regA.token)
        let bobClient = try SyncClient(store: bobStore, server: server, token: regB.token)
        #expect(try await bobClient.accept(code: try await aliceClient.invite().code) == alice)
        try await aliceClient.sync()
        try await bobClient.sync()
        try await aliceClient.sync()

        // Bob's bad records, each of a group Alice receives (pages read: progress).
        let bobDevice = TestDevice(baseURL: fixture.baseURL, token: regB.token, reader: bob.uuid)
        let heldByBob = try bobStore.changes(since: VersionVector())
        let alicesShared = try #require(heldByBob.first { $0.reader == alice })
        let bobsOwn = heldByBob.filter { $0.reader == bob }
        var (_, template, _) = try pagesRead(bobsOwn)
        template.eventID = EventID()
        var copied = template
        copied.origin = EventOrigin(stamp: copied.origin?.stamp ?? UInt64(copied.recordedAt.microseconds), replica: alicesShared.origin!.replica, sequence: alicesShared.origin!.sequence)
        let copiedReply = try await bobDevice.push([copied])
        #expect(copiedReply.status == 409, "\(copiedReply.text)")
        #expect(copiedReply.field == "events[0].record.origin.sequence")
        var withoutOrigin = template
        withoutOrigin.origin = nil
        #expect(try await bobDevice.push([withoutOrigin]).status == 400)
        var provisional = template
        provisional.origin?.replica = .provisional
        #expect(try await bobDevice.push([provisional]).status == 400)

        // Both keep syncing: Bob's new event reaches Alice, and the two agree on Bob's events.
        let fresh = try #require(try bobStore.execute(.addBook(BookMetadata(title: "After", pageCount: 200), status: .reading),
                                                       book: BookID(), context: CommandContext(reader: bob, occurredAt: Timestamp(Date()),
                                                                                               timeZone: "UTC")).first)
        try await bobClient.sync()
        let report = try await aliceClient.sync()
        #expect(report.pulled.appended == 1)
        let aliceHoldsOfBob = try Set(aliceStore.changes(since: VersionVector()).filter { $0.reader == bob }.map(\.eventID))
        #expect(aliceHoldsOfBob.contains(fresh.eventID))
        #expect(!aliceHoldsOfBob.contains(copied.eventID))
        #expect(aliceHoldsOfBob == Set(try bobStore.changes(since: VersionVector())
            .filter { $0.reader == bob && !privateByDefault.contains($0.type.tag) }.map(\.eventID)))
    }
}
