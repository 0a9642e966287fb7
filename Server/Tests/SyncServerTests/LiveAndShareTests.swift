import AsyncHTTPClient
import Foundation
import NIOCore
import ReadingEvents
import Testing

/// An open `/v1/stream` of one device, read as text.
final class EventStream {
    private var body: HTTPClientResponse.Body.AsyncIterator
    private(set) var received = ""
    private(set) var ended = false

    init(_ device: TestDevice) async throws {
        var request = HTTPClientRequest(url: device.baseURL + "/v1/stream")
        request.headers.add(name: "Authorization", value: "Bearer \(device.token!)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        guard response.status.code == 200 else {
            throw CommandError(command: ["stream"], status: Int32(response.status.code), output: "")
        }
        body = response.body.makeAsyncIterator()
    }

    /// Reads until `text` arrived, the stream ended, or a bound of `seconds` passed (a chunk
    /// is awaited at most until the next keepalive, 15 s); whether `text` arrived.
    func read(until text: String, seconds: Int = 10) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !received.contains(text), !ended, ContinuousClock.now < deadline {
            guard let chunk = try await body.next() else { ended = true; break }
            received += String(buffer: chunk)
        }
        return received.contains(text)
    }

    /// Reads until the server ends the stream or `seconds` passed; whether it ended.
    func readToEnd(seconds: Int = 10) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !ended, ContinuousClock.now < deadline {
            do {
                guard let chunk = try await body.next() else { ended = true; break }
                received += String(buffer: chunk)
            } catch {
                ended = true
            }
        }
        return ended
    }
}

@Suite("Live notices to the reader's own devices, revoked streams, share groups turned on later", needsPostgres)
struct LiveAndShareTests {
    @Test func aReadersOtherDevicesAreToldOfItsPushes() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 5, seed: 81)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let tablet = try await phone.registerAnother()
        let stream = try await EventStream(tablet)
        #expect(try await stream.read(until: "event: ready"))
        #expect(try await phone.push(events).status == 200)
        #expect(try await stream.read(until: "event: changed"), "the tablet was not told: \(stream.received)")
        #expect(stream.received.contains(reader.uuidString.lowercased()))
    }

    @Test func aRevokedDevicesOpenStreamIsClosed() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let tablet = try await phone.registerAnother()
        let stream = try await EventStream(tablet)
        let phoneStream = try await EventStream(phone)
        #expect(try await stream.read(until: "event: ready"))
        #expect(try await phoneStream.read(until: "event: ready"))
        let devices = try await phone.send(.GET, "/v1/devices").json["devices"] as? [[String: Any]] ?? []
        let tabletID = try #require(devices.last?["device"] as? String)
        #expect(try await phone.send(.DELETE, "/v1/devices/\(tabletID)").status == 204)
        #expect(await stream.readToEnd(), "the revoked tablet's stream stayed open")
        // The phone's stream stays open and is still told of pushes.
        #expect(try await phone.push(syntheticHistory(reader: reader, count: 2, seed: 82)).status == 200)
        #expect(try await phoneStream.read(until: "event: changed"))
        #expect(!phoneStream.ended)
    }

    @Test func turningAGroupOnSharesItsEarlierEventsAndTurningItOffStopsNewOnes() async throws {
        let fixture = try Fixture()
        let histories = demoHistories(readers: 2, days: 90, seed: 22)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let code = try #require(try await alice.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)
        let history = histories[0].events
        let memoIndices = history.indices.filter { memoTags.contains(history[$0].type.tag) }
        try #require(memoIndices.count >= 3, "the demo history has memos")
        // Alice pushes all but her last memo and what follows it.
        let cut = memoIndices.last!
        for start in stride(from: 0, to: cut, by: 500) {
            #expect(try await alice.push(Array(history[start..<min(start + 500, cut)])).status == 200)
        }
        let (before, cursor) = try await bob.pullAll(limit: 250)
        #expect(before.map(\.envelope) == history[..<cut].filter { !privateByDefault.contains($0.type.tag) })

        // Memos on: Bob's next pull brings exactly the earlier memos, once.
        var settings = try await alice.send(.GET, "/v1/share-settings").json
        settings["memos"] = true
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
        let (memos, afterMemos) = try await bob.pullAll(after: cursor, limit: 7)
        #expect(memos.map(\.envelope) == history[..<cut].filter { memoTags.contains($0.type.tag) })
        let (nothing, afterNothing) = try await bob.pullAll(after: afterMemos)
        #expect(nothing.isEmpty)

        // New events, the last memo among them, arrive as usual.
        #expect(try await alice.push(Array(history[cut...].prefix(500))).status == 200)
        let (new, afterNew) = try await bob.pullAll(after: afterNothing)
        let expectedNew = history[cut...].prefix(500).filter { !privateByDefault.subtracting(memoTags).contains($0.type.tag) }
        #expect(new.map(\.envelope) == expectedNew)
        #expect(new.contains { memoTags.contains($0.envelope.type.tag) })

        // Memos off: a later memo is not shared; what Bob pulled stays his (the server cannot
        // take it back from his device).
        settings["memos"] = false
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
        var lateMemo = history[try #require(history.firstIndex { $0.type.tag == "MemoWritten" })]
        lateMemo.eventID = EventID()
        lateMemo.origin?.sequence = UInt64(history.count + 1)
        guard case .memoWritten(var memo) = lateMemo.event else { Issue.record("not a memo"); return }
        memo.memo = MemoID()
        lateMemo.event = .memoWritten(memo)
        #expect(try await alice.push([lateMemo]).status == 200)
        let (afterOff, _) = try await bob.pullAll(after: afterNew)
        #expect(afterOff.isEmpty)
    }
}
