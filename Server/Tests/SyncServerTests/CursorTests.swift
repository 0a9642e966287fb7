import Foundation
import ReadingEvents
import SyncServerCore
import SyncWire
import Testing

/// The pull cursor stays bounded by the reader's current partners, never by its history (issue
/// 39, finding 8: the cursor kept a position for every former partner, and past about 140 of them
/// the server made a cursor it then refused, so the device could never pull again).
@Suite("Pull cursors: bounded by current partners, always accepted", needsPostgres)
struct CursorTests {
    /// One event of `reader` that the default share settings share (no memo, goal or home order).
    static func sharedEvent(of reader: UUID, seed: UInt64) -> EventEnvelope {
        syntheticHistory(reader: reader, count: 40, seed: seed).first { !privateByDefault.contains($0.type.tag) }!
    }

    /// Bob pairs with 200 readers one after the other; each pushes a shared event, Bob pulls it,
    /// and the partnership ends. Every pull answers 200, the cursor never grows with former
    /// partners, and a partner paired again reaches Bob again (its shared events, from the start:
    /// the device skips what it holds), with nothing it does not share.
    @Test func twoHundredFormerPartnersLeaveTheCursorSmall() async throws {
        let fixture = try Fixture(arguments: ["--registrations-per-address", "10000"])
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        var cursor = ""
        var longest = 0
        var first: (device: TestDevice, event: EventEnvelope)?
        for index in 0..<200 {
            let partner = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
            let code = try #require(try await partner.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
            let accepted = try await bob.send(.POST, "/v1/invites/accept", json: ["code": code])
            try #require(accepted.status == 200, "partner \(index): \(accepted.text)")
            let event = Self.sharedEvent(of: partner.reader, seed: UInt64(1000 + index))
            #expect(try await partner.push([event]).status == 200)
            if first == nil { first = (partner, event) }
            let reply = try await bob.send(.GET, "/v1/events?limit=100" + (cursor.isEmpty ? "" : "&after=\(cursor)"))
            try #require(reply.status == 200, "pull after \(index) former partners (cursor of \(cursor.utf8.count) bytes): \(reply.text)")
            let events = reply.json["events"] as? [[String: Any]] ?? []
            #expect(events.map { $0["eventID"] as? String } == [event.eventID.uuid.uuidString.lowercased()], "partner \(index)")
            cursor = try #require(reply.json["next"] as? String)
            longest = max(longest, cursor.utf8.count)
            #expect(try await bob.send(.DELETE, "/v1/partners/\(partner.reader.uuidString)").status == 204)
        }
        // Bob's own events and one more pull: the cursor names Bob and no former partner.
        let own = Self.sharedEvent(of: bob.reader, seed: 7)
        #expect(try await bob.push([own]).status == 200)
        let (ownPulled, afterAll) = try await bob.pullAll(after: cursor)
        #expect(ownPulled.map(\.envelope.eventID) == [own.eventID])
        let parsed = try #require(PullCursor(encoded: afterAll))
        #expect(Set(parsed.positions.keys) == [bob.reader])
        // One current partner at most: the cursor never held more than two readers' positions.
        #expect(longest <= 2 * PullCursor.maxEncodedBytesPerReader + 4, "longest cursor: \(longest) bytes")

        // The first partner, paired again: what it shares reaches Bob (its earlier event again,
        // and a new one), its memo does not.
        let (again, event) = try #require(first)
        let code = try #require(try await again.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)
        let later = syntheticHistory(reader: again.reader, count: 400, seed: 99)
        let newShared = try #require(later.first { !privateByDefault.contains($0.type.tag) })
        let memo = try #require(later.first { memoTags.contains($0.type.tag) })
        #expect(try await again.push([newShared, memo]).status == 200)
        let (reunited, _) = try await bob.pullAll(after: afterAll)
        #expect(reunited.allSatisfy { $0.reader == again.reader })
        #expect(reunited.map(\.envelope.eventID) == [event.eventID, newShared.eventID])
    }

    /// A reader has at most `--max-partners` partners: accepting past it is 409 `partner_limit`
    /// for a full inviter and for a full acceptor alike (nothing stored); ending a partnership
    /// frees a place.
    @Test func partnersAreLimited() async throws {
        let fixture = try Fixture(arguments: ["--max-partners", "2"])
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        var partners: [TestDevice] = []
        for _ in 0..<3 { partners.append(try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())) }
        func invite(_ device: TestDevice) async throws -> String {
            try #require(try await device.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        }
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": try await invite(partners[0])]).status == 200)
        #expect(try await partners[1].send(.POST, "/v1/invites/accept", json: ["code": try await invite(bob)]).status == 200)
        // Bob is full: as acceptor and as inviter.
        let asAcceptor = try await bob.send(.POST, "/v1/invites/accept", json: ["code": try await invite(partners[2])])
        #expect(asAcceptor.status == 409)
        #expect(asAcceptor.error == "partner_limit", "\(asAcceptor.text)")
        let code = try await invite(bob)
        let asInviter = try await partners[2].send(.POST, "/v1/invites/accept", json: ["code": code])
        #expect(asInviter.status == 409)
        #expect(asInviter.error == "partner_limit", "\(asInviter.text)")
        #expect(try fixture.cluster.psql("SELECT count(*) FROM partnerships", database: fixture.database) == "4")
        // The refused invite was not used up: once Bob ends a partnership, it is accepted.
        #expect(try await bob.send(.DELETE, "/v1/partners/\(partners[0].reader.uuidString)").status == 204)
        #expect(try await partners[2].send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)
        let listed = try await bob.send(.GET, "/v1/partners").json["partners"] as? [[String: Any]] ?? []
        #expect(Set(listed.compactMap { $0["reader"] as? String })
                == Set([partners[1], partners[2]].map { $0.reader.uuidString.lowercased() }))
    }
}

/// The cursor's own form, without a server: every cursor the server can emit parses back to
/// itself and fits the `after` limit, and no string crashes the parser.
@Suite("Pull cursor encoding")
struct CursorEncodingTests {
    /// Seeded random cursors (any positions up to Int64.max, any groups, restarts under way)
    /// round-trip; the largest a server with the default partner limit can emit (the reader and
    /// every partner at Int64.max, every group) fits `maxCursorBytes`.
    @Test func everyEmittedCursorParses() throws {
        var generator = SeededGenerator(seed: 39)
        let groups = ShareGroup.allCases.map(\.rawValue)
        func someGroups() -> Set<String> { Set(groups.filter { _ in Bool.random(using: &generator) }) }
        for round in 0..<2000 {
            var cursor = PullCursor()
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                let reader = seededUUID(&generator)
                let big = Bool.random(using: &generator)
                cursor.positions[reader] = big ? Int64.random(in: 0...Int64.max, using: &generator) : Int64.random(in: 0...5000, using: &generator)
                if Bool.random(using: &generator) {
                    cursor.shares[reader] = PullCursor.Share(groups: someGroups(), skipThrough: Int64.random(in: 0...Int64.max, using: &generator),
                                                             skipGroups: someGroups())
                }
            }
            let encoded = cursor.encoded
            #expect(PullCursor(encoded: encoded) == cursor, "round \(round): \(encoded)")
        }
        let limits = ServerLimits()
        var largest = PullCursor()
        for _ in 0...limits.maxPartners {
            let reader = seededUUID(&generator)
            largest.positions[reader] = .max
            largest.shares[reader] = PullCursor.Share(groups: Set(groups), skipThrough: .max, skipGroups: Set(groups))
        }
        let encoded = largest.encoded
        #expect(encoded.utf8.count <= limits.maxCursorBytes, "\(encoded.utf8.count) bytes for \(limits.maxPartners) partners")
        #expect(encoded.utf8.count <= (limits.maxPartners + 1) * PullCursor.maxEncodedBytesPerReader + 4)
        #expect(PullCursor(encoded: encoded) == largest)
    }

    /// A cursor of the earlier text form (devices hold them) still parses.
    @Test func theTextFormStillParses() throws {
        let reader = UUID(), partner = UUID()
        let text = "\(reader.uuidString.lowercased()):12,\(partner.uuidString.lowercased()):5:books.progress:3:books"
        let encoded = Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let cursor = try #require(PullCursor(encoded: encoded))
        #expect(cursor.positions == [reader: 12, partner: 5])
        #expect(cursor.shares == [partner: PullCursor.Share(groups: ["books", "progress"], skipThrough: 3, skipGroups: ["books"])])
    }

    /// Arbitrary bytes, and every prefix and one-byte change of a real cursor, parse or are
    /// refused (nil); none crashes, and whatever parses encodes again to a cursor that parses.
    @Test func arbitraryInputNeverCrashes() throws {
        var generator = SeededGenerator(seed: 3939)
        var cursor = PullCursor()
        for index in 0..<5 {
            let reader = seededUUID(&generator)
            cursor.positions[reader] = Int64(index) * 1_000_003
            if index > 0 { cursor.shares[reader] = PullCursor.Share(groups: ["books", "memos"], skipThrough: 7, skipGroups: ["books"]) }
        }
        let bytes = try #require(Tokens.decodeBase64url(cursor.encoded))
        var inputs: [[UInt8]] = (0...bytes.count).map { Array(bytes.prefix($0)) }
        for position in bytes.indices {
            for value: UInt8 in [0, 1, 0x7f, 0x80, 0xff] {
                var changed = bytes
                changed[position] = value
                inputs.append(changed)
            }
        }
        for _ in 0..<3000 {
            inputs.append((0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            inputs.append([1] + (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        for input in inputs {
            if let parsed = PullCursor(encoded: Tokens.base64url(input)) {
                #expect(PullCursor(encoded: parsed.encoded) == parsed)
            }
        }
    }

    /// Base64url (tokens and cursors) round-trips any bytes, is the standard alphabet with `-`
    /// and `_` and no padding, and reads padded and standard-alphabet text as before.
    @Test func base64urlRoundTripsAnyBytes() {
        var generator = SeededGenerator(seed: 3940)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Tokens.base64url(bytes)
            let standard = Data(bytes).base64EncodedString()
            #expect(text == String(standard.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" }))
            #expect(Tokens.decodeBase64url(text) == bytes)
            #expect(Tokens.decodeBase64url(standard) == bytes)
        }
        #expect(Tokens.decodeBase64url("a") == nil)
        #expect(Tokens.decodeBase64url("ab!c") == nil)
    }
}
