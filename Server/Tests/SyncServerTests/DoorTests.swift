import Foundation
import ReadingEvents
import Testing

/// Issue 39, finding 8: what the server refuses at the door, against the real server process.
@Suite("Input refused at the door: names, sequences, duplicate keys, registrations, invites", needsPostgres)
struct DoorTests {
    /// Before: bidirectional overrides, zero-width spaces and U+2028 were taken (201).
    @Test func deviceNamesRefuseFormatCharactersAndSeparators() async throws {
        let fixture = try Fixture()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        for (what, name) in [("a right-to-left override", "gnp.\u{202E}exe"), ("a zero-width space", "pho\u{200B}ne"),
                             ("a line separator", "two\u{2028}lines"), ("a paragraph separator", "two\u{2029}paragraphs"),
                             ("an isolate", "\u{2067}tablet\u{2069}"), ("a byte order mark", "\u{FEFF}phone")] {
            let reply = try await phone.send(.POST, "/v1/devices", json: ["name": name])
            #expect(reply.status == 400, "\(what): \(reply.status) \(reply.text)")
            #expect(reply.field == "name", "\(what)")
        }
        // Emoji sequences (zero-width joiner) and scripts that need the non-joiner are names.
        #expect(try await phone.send(.POST, "/v1/devices", json: ["name": "👨‍👩‍👧 iPad"]).status == 201)
        #expect(try await phone.send(.POST, "/v1/devices", json: ["name": "می‌خوانم"]).status == 201)
    }

    /// Before: sequences above Int64.max were clamped to Int64.max, so two of them collided (the
    /// second was 409 `origin_taken`, or both stored under one number).
    @Test func sequencesAboveInt64AreRefusedAtTheDoor() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        var events = syntheticHistory(reader: reader, count: 3, seed: 91)
        events[1].origin?.sequence = UInt64(Int64.max) + 1
        let reply = try await phone.push(events)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.error == "invalid_record")
        #expect(reply.field == "events[1].record.origin.sequence", "\(reply.text)")
        #expect(try fixture.storedEventCount() == 0)
        events[1].origin?.sequence = UInt64(Int64.max)
        #expect(try await phone.push(events).status == 200)
    }

    /// Before: `{"name": "a", "name": "b"}` registered a device named "a" (the first value),
    /// where most parsers keep the last.
    @Test func duplicateJSONKeysAreRefused() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let anonymous = TestDevice(baseURL: fixture.baseURL, token: nil, reader: reader)
        let twice = Data("{\"reader\":\"\(reader.uuidString)\",\"name\":\"phone\",\"name\":\"evil\"}".utf8)
        let reply = try await anonymous.send(.POST, "/v1/devices", json: twice)
        #expect(reply.status == 400, "\(reply.status) \(reply.text)")
        #expect(reply.error == "duplicate_key")
        #expect(reply.field == "name")
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let settings = Data("{\"memos\":true,\"progress\":true,\"memos\":false}".utf8)
        let put = try await phone.send(.PUT, "/v1/share-settings", json: settings)
        #expect(put.status == 400, "\(put.status) \(put.text)")
        #expect(put.field == "memos")
        let nested = Data("{\"events\":[{\"record\":\"AA\"},{\"record\":\"AA\",\"record\":\"BB\"}]}".utf8)
        let push = try await phone.send(.POST, "/v1/events", json: nested)
        #expect(push.status == 400, "\(push.text)")
        #expect(push.field == "events[1].record", "\(push.text)")
        // Equal keys written differently (an escape) are one key too.
        let escaped = Data("{\"memos\":true,\"m\\u0065mos\":false}".utf8)
        #expect(try await phone.send(.PUT, "/v1/share-settings", json: escaped).field == "memos")
    }

    /// Before: registration and invites were unlimited (566 readers a second from one address,
    /// 1,334 live invites in 5 s).
    @Test func registrationsPerAddressAndLiveInvitesAreLimited() async throws {
        // The defaults: 30 first registrations per address in the window (10 minutes here, so that
        // a loaded machine cannot outlast it), 20 live invites per reader.
        let fixture = try Fixture(arguments: ["--rate-window", "600"])
        var first: TestDevice?
        for _ in 0..<30 { first = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID()) }
        let refused = try await TestDevice(baseURL: fixture.baseURL, token: nil, reader: UUID())
            .send(.POST, "/v1/devices", json: ["reader": UUID().uuidString, "name": "one too many"])
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.headers.first(name: "Retry-After") != nil)
        // A device of a known reader (with its token) is not a first registration.
        let phone = try #require(first)
        #expect(try await phone.send(.POST, "/v1/devices", json: ["name": "tablet"]).status == 201)
        for _ in 0..<20 { #expect(try await phone.send(.POST, "/v1/invites", json: [String: Any]()).status == 201) }
        let past = try await phone.send(.POST, "/v1/invites", json: [String: Any]())
        #expect(past.status == 409, "\(past.text)")
        #expect(past.error == "invite_limit")
    }
}

@Suite("Rate limits keyed by what a client proves, and trusted proxies", needsPostgres)
struct RateLimitKeyTests {
    /// Before: 60 unknown tokens from an address gave every device behind it 429 for a minute,
    /// a valid device whose token this process had not verified in the last 10 s included.
    @Test func strangersBehindOneAddressDoNotLockOutAKnownReader() async throws {
        let fixture = try Fixture(arguments: ["--rate-window", "600"])
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let tablet = try await phone.registerAnother()
        let third = try await phone.registerAnother(name: "third")
        #expect(try await phone.send(.GET, "/v1/devices").status == 200)
        for _ in 0..<60 {
            let stranger = TestDevice(baseURL: fixture.baseURL, token: UUID().uuidString.lowercased() + "." + String(repeating: "A", count: 43),
                                      reader: UUID())
            #expect(try await stranger.send(.GET, "/v1/devices").status == 401)
        }
        // The tablet's token was never used: not in the process's cache, but its reader is known.
        let reply = try await tablet.send(.GET, "/v1/devices")
        #expect(reply.status == 200, "a known reader's device behind the address: \(reply.status) \(reply.text)")
        // A stranger is still refused without a look-up.
        let stranger = TestDevice(baseURL: fixture.baseURL, token: UUID().uuidString.lowercased() + ".x", reader: UUID())
        #expect(try await stranger.send(.GET, "/v1/devices").status == 429)
        // And guessing a known reader's token is limited per reader too.
        for _ in 0..<10 {
            let guess = TestDevice(baseURL: fixture.baseURL, token: phone.reader.uuidString.lowercased() + "." + String(repeating: "B", count: 43),
                                   reader: phone.reader)
            _ = try await guess.send(.GET, "/v1/devices")
        }
        #expect(try await third.send(.GET, "/v1/devices").status == 429, "the reader's budget at this address is spent")
    }

    /// With `--trusted-proxy 127.0.0.1`, limits count by the client `X-Forwarded-For` names: one
    /// client's failures do not limit another behind the same proxy. From an untrusted peer the
    /// header is ignored.
    @Test func aTrustedProxysForwardedForNamesTheClient() async throws {
        let fixture = try Fixture(arguments: ["--trusted-proxy", "127.0.0.1", "--rate-window", "600"])
        func stranger(from address: String) async throws -> Int {
            let token = UUID().uuidString.lowercased() + "." + String(repeating: "A", count: 43)
            let device = TestDevice(baseURL: fixture.baseURL, token: token, reader: UUID())
            return try await device.send(.GET, "/v1/devices", headers: ["X-Forwarded-For": "203.0.113.9, \(address)"]).status
        }
        for _ in 0..<60 { #expect(try await stranger(from: "198.51.100.1") == 401) }
        #expect(try await stranger(from: "198.51.100.1") == 429)
        #expect(try await stranger(from: "198.51.100.2") == 401, "another client behind the proxy")
    }
}
