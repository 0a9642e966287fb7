import Foundation
import Testing

@Suite("Hostile clients: slow connections, a stopped database, guessing, oversized strings, many devices", needsPostgres)
struct HostileClientTests {
    /// 400 connections each holding half a request, against a server that may open 256 files:
    /// without a cap the server runs out of descriptors and answers no one; with the default
    /// cap (below the file limit) a new connection evicts the oldest half-sent one, and a device
    /// registers, pushes and pulls.
    @Test func slowHalfSentConnectionsDoNotStarveADevice() async throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase()
        let server = try ServerProcess.start(databaseURL: cluster.url(database: database), openFileLimit: 256)
        defer { server.stop() }
        var slow: [RawConnection] = []
        for _ in 0..<400 {
            let connection = try RawConnection(port: server.port)
            try connection.send("POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
            slow.append(connection)
        }
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(server.baseURL, reader: reader)
        let events = syntheticHistory(reader: reader, count: 10, seed: 7)
        let push = try await phone.send(.POST, "/v1/events", json: TestDevice.pushBody(events), timeout: .seconds(30))
        #expect(push.status == 200, "\(push.text)")
        #expect(try await phone.pullAll().events.count == 10)
        withExtendedLifetime(slow) {}
    }

    /// A request sent in part is cut after the header timeout, a body sent in part after the body
    /// timeout, and a kept-alive connection after the idle timeout.
    @Test func halfSentRequestsAndIdleConnectionsAreClosed() async throws {
        let fixture = try Fixture(arguments: ["--header-timeout", "1", "--body-timeout", "1", "--idle-timeout", "1"])
        let header = try RawConnection(port: fixture.server.port)
        try header.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        #expect(header.readUntilClosed().closed, "a half-sent header is cut")

        let body = try RawConnection(port: fixture.server.port)
        try body.send("POST /v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
        #expect(body.readUntilClosed().closed, "a half-sent body is cut")

        let idle = try RawConnection(port: fixture.server.port)
        try idle.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = idle.readUntilClosed()
        #expect(answer.closed, "an idle kept-alive connection is closed")
        #expect(answer.text.hasPrefix("HTTP/1.1 200"), "the request itself was answered: \(answer.text.prefix(200))")
    }

    /// A default header timeout exists: a connection that never finishes its header is closed
    /// (the read gives up after 30 s: the default is 10 s).
    @Test func theHeaderTimeoutIsOnByDefault() async throws {
        let fixture = try Fixture()
        let connection = try RawConnection(port: fixture.server.port, readTimeout: 30)
        try connection.send("GET /health HTTP/1.1\r\n")
        #expect(connection.readUntilClosed().closed)
    }

    /// With PostgreSQL stopped, `/health` and requests answer 503 with the JSON error body (the
    /// client's timeout of 10 s is far above the server's acquire timeout), and `/health` is 200
    /// again once it is back.
    @Test func whilePostgresIsDownRequestsAnswer503() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let database = try cluster.createDatabase()
        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(server.baseURL, reader: reader)
        cluster.stop()
        let health = try await phone.send(.GET, "/health", timeout: .seconds(10))
        #expect(health.status == 503)
        #expect(health.error == "unavailable", "\(health.text)")
        let push = try await phone.send(.POST, "/v1/events", json: TestDevice.pushBody(syntheticHistory(reader: reader, count: 3, seed: 2)),
                                        timeout: .seconds(10))
        #expect(push.status == 503)
        #expect(push.error == "unavailable", "\(push.text)")
        let register = try await TestDevice(baseURL: server.baseURL, token: nil, reader: UUID())
            .send(.POST, "/v1/devices", json: ["reader": UUID().uuidString, "name": "x"], timeout: .seconds(10))
        #expect(register.status == 503)
        try cluster.start()
        try await waitUntil("/health to answer 200 again", interval: .milliseconds(200)) {
            try await phone.send(.GET, "/health", timeout: .seconds(10)).status == 200
        }
        #expect(try await phone.push(syntheticHistory(reader: reader, count: 3, seed: 2)).status == 200)
    }

    /// Wrong invite codes: 10 per token, then 429 with `Retry-After` and the JSON body (even
    /// for the right code), each refusal logged; 30 per address across tokens.
    @Test func inviteGuessingIsLimitedPerTokenAndPerAddress() async throws {
        // A window of an hour: the count is what is checked, not the clock; a loaded machine
        // (tests run in parallel) once spread the attempts past the default 60 s window.
        let fixture = try Fixture(arguments: ["--rate-window", "3600"])
        let inviter = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let invite = try await inviter.send(.POST, "/v1/invites", json: [String: Int]())
        let code = try #require(invite.json["code"] as? String)
        let guesser = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        for attempt in 0..<10 {
            let reply = try await guesser.send(.POST, "/v1/invites/accept", json: ["code": String(format: "WRONG%05d", attempt)])
            #expect(reply.status == 404)
        }
        for guess in ["WRONG99999", code] {
            let refused = try await guesser.send(.POST, "/v1/invites/accept", json: ["code": guess])
            #expect(refused.status == 429)
            #expect(refused.error == "rate_limited", "\(refused.text)")
            #expect(Int(refused.headers.first(name: "Retry-After") ?? "").map { $0 >= 1 } == true)
        }
        #expect((try await inviter.send(.GET, "/v1/partners").json["partners"] as? [Any])?.isEmpty == true, "the right code was not taken")
        // Two more tokens from the same address: 10 + 10 more failures reach the address's 30.
        for _ in 0..<2 {
            let other = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
            for _ in 0..<10 { #expect(try await other.send(.POST, "/v1/invites/accept", json: ["code": "NOPE"]).status == 404) }
        }
        let fresh = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        #expect(try await fresh.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 429, "the address's budget is spent")
        let log = fixture.server.log
        #expect(log.components(separatedBy: "invite attempt refused").count - 1 >= 33, "every failed or refused attempt is logged")
    }

    /// Unknown tokens: 60 per address, then 429 with `Retry-After` and a log line; the
    /// database is not asked.
    @Test func failedLoginsAreLimitedPerAddress() async throws {
        // A window of an hour, as above: under load the 60 logins took 83-94 s, past 60 s.
        let fixture = try Fixture(arguments: ["--rate-window", "3600"])
        for _ in 0..<60 {
            let stranger = TestDevice(baseURL: fixture.baseURL, token: UUID().uuidString.lowercased() + "." + String(repeating: "A", count: 43),
                                      reader: UUID())
            #expect(try await stranger.send(.GET, "/v1/devices").status == 401)
        }
        let stranger = TestDevice(baseURL: fixture.baseURL, token: UUID().uuidString.lowercased() + ".x", reader: UUID())
        let refused = try await stranger.send(.GET, "/v1/devices")
        #expect(refused.status == 429)
        #expect(refused.error == "rate_limited", "\(refused.text)")
        #expect(refused.headers.first(name: "Retry-After") != nil)
        #expect(fixture.server.log.contains("failed login"))
    }

    /// Strings beyond their byte limit are 400 naming the field: an invite code, a cursor.
    @Test func everyStringHasAByteLimit() async throws {
        let fixture = try Fixture()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let longCode = try await phone.send(.POST, "/v1/invites/accept", json: ["code": String(repeating: "A", count: 1_000_000)])
        #expect(longCode.status == 400)
        #expect(longCode.field == "code", "\(longCode.text.prefix(300))")
        // A cursor of 450 well-formed positions (about 23 KB): parsed as is before.
        func cursor(positions: Int) -> String {
            let text = (0..<positions).map { _ in UUID().uuidString.lowercased() + ":1" }.joined(separator: ",")
            return Data(text.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let pull = try await phone.send(.GET, "/v1/events?after=\(cursor(positions: 450))")
        #expect(pull.status == 400)
        #expect(pull.field == "after", "\(pull.text.prefix(300))")
        // A request line over the decoder's 80 KiB: 400 with the JSON body too (it was empty).
        let huge = try await phone.send(.GET, "/v1/events?after=\(cursor(positions: 3000))")
        #expect(huge.status == 400)
        #expect(huge.error == "malformed_request", "\(huge.text.prefix(300))")
    }

    /// A reader has at most 100 devices that are not revoked: the 101st is 409 `device_limit`
    /// (nothing stored); a revoked device frees its place.
    @Test func aReaderHasAtMost100Devices() async throws {
        let fixture = try Fixture()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        var last = phone
        for index in 1..<100 { last = try await phone.registerAnother(name: "device \(index)") }
        let refused = try await phone.send(.POST, "/v1/devices", json: ["name": "one too many"])
        #expect(refused.status == 409)
        #expect(refused.error == "device_limit", "\(refused.text)")
        #expect(try fixture.cluster.psql("SELECT count(*) FROM devices", database: fixture.database) == "100")
        let devices = try await last.send(.GET, "/v1/devices").json["devices"] as? [[String: Any]] ?? []
        let id = try #require(devices.last?["device"] as? String)
        #expect(try await phone.send(.DELETE, "/v1/devices/\(id)").status == 204)
        #expect(try await phone.send(.POST, "/v1/devices", json: ["name": "replacement"]).status == 201)
    }
}
