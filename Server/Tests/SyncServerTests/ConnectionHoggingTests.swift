import Foundation
import Testing

/// Issue 39, findings 1 and 2, with real sockets at a small connection cap (16): event streams
/// and request bodies still arriving are evictable, and bounded per device, so that one token, or
/// none, cannot take the server from others. Before, every stream and every connection whose
/// header was complete counted as serving: at the cap, every new connection (`/health` included)
/// was closed until the attacker let go.
@Suite("Streams and slow bodies cannot hold every connection", needsPostgres)
struct ConnectionHoggingTests {
    static let cap = 16

    /// A raw `GET /health` on a new connection: the status line, or what came instead.
    func health(_ port: Int) throws -> String {
        let connection = try RawConnection(port: port, readTimeout: 10)
        try connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let head = connection.readHead()
        return head.text.isEmpty ? (head.closed ? "closed without an answer" : "no answer in 10 s") : String(head.text.prefix(40))
    }

    func openStream(_ port: Int, token: String) throws -> RawConnection {
        let connection = try RawConnection(port: port, readTimeout: 10)
        try connection.send("GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
        return connection
    }

    /// One device opens as many streams as the server takes connections: the server keeps a few
    /// of them (the newest) and keeps answering everyone else.
    @Test func oneTokensStreamsCannotHoldEveryConnection() async throws {
        let fixture = try Fixture(arguments: ["--max-connections", "\(Self.cap)"])
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        var streams: [RawConnection] = []
        for _ in 0..<(Self.cap + 4) {
            let stream = try openStream(fixture.server.port, token: phone.token!)
            _ = stream.readHead()
            streams.append(stream)
        }
        let answer = try health(fixture.server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "a new connection while one token holds streams: \(answer)")
        // Another reader registers and streams.
        let other = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let stream = try openStream(fixture.server.port, token: other.token!)
        #expect(stream.readHead().text.hasPrefix("HTTP/1.1 200"))
        withExtendedLifetime(streams) {}
    }

    /// Streams of many devices fill the cap: a new connection evicts the oldest stream (its
    /// client reconnects) rather than being refused.
    @Test func streamsOfManyDevicesAreEvictedOldestFirst() async throws {
        let fixture = try Fixture(arguments: ["--max-connections", "\(Self.cap)"])
        var devices: [TestDevice] = []
        for _ in 0..<Self.cap { devices.append(try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())) }
        var streams: [RawConnection] = []
        for device in devices {
            let stream = try openStream(fixture.server.port, token: device.token!)
            _ = stream.readHead()
            streams.append(stream)
        }
        let answer = try health(fixture.server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "a new connection while streams fill the cap: \(answer)")
        withExtendedLifetime(streams) {}
    }

    /// Anonymous registrations that send 4 bytes of an 8,000-byte body (within the anonymous
    /// cap) and hold it: the server keeps answering (a body still arriving is evictable, oldest
    /// first).
    @Test func anonymousSlowBodiesDoNotLockEveryoneOut() async throws {
        let fixture = try Fixture(arguments: ["--max-connections", "\(Self.cap)"])
        var slow: [RawConnection] = []
        for _ in 0..<(Self.cap + 4) {
            let connection = try RawConnection(port: fixture.server.port, readTimeout: 1)
            try connection.send("POST /v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 8000\r\n\r\n{\"re")
            slow.append(connection)
        }
        try await Task.sleep(for: .milliseconds(300))
        let answer = try health(fixture.server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "a new connection while slow bodies fill the cap: \(answer)")
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        #expect(try await phone.send(.GET, "/v1/devices").status == 200)
        withExtendedLifetime(slow) {}
    }

    /// An anonymous body is small (a registration): one declared over the anonymous cap is 413 at
    /// once, before any of it is read, and one sent over it is 413 too (it was read up to 4 MiB
    /// and then decoded: 201 for a registration padded with spaces).
    @Test func anAnonymousBodyIsCappedBeforeItIsRead() async throws {
        let fixture = try Fixture()
        let declared = try RawConnection(port: fixture.server.port, readTimeout: 5)
        try declared.send("POST /v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n")
        let head = declared.readHead()
        #expect(head.text.hasPrefix("HTTP/1.1 413"), "a 200,000-byte anonymous body declared: \(head.text.isEmpty ? "no answer in 5 s" : head.text)")

        let padded = Data(("{\"reader\":\"\(UUID().uuidString)\",\"name\":\"phone\"" + String(repeating: " ", count: 40_000) + "}").utf8)
        let reply = try await TestDevice(baseURL: fixture.baseURL, token: nil, reader: UUID()).send(.POST, "/v1/devices", json: padded)
        #expect(reply.status == 413, "\(reply.status) \(reply.text.prefix(200))")
        #expect(reply.error == "body_too_large")
    }
}
