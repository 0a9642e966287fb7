import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ReadingEvents
import SyncServerCore
import SyncWire
import Testing

/// The routes driven in process over ``InMemorySyncStore``: no PostgreSQL, no server process.
@Suite("Routes without a database (the in-memory SyncStore)")
struct RouteTests {
    /// Runs `body` against the routes over a fresh in-memory store.
    func withRoutes(limits: ServerLimits = ServerLimits(), _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let store = InMemorySyncStore()
        let router = Router(context: SyncRequestContext.self)
        SyncRoutes(store: store, hub: LiveHub(store: store), limits: limits, logger: Logger(label: "route-tests")).add(to: router)
        try await Application(router: router).test(.router) { client in try await body(client) }
    }

    @Test func registerPushAndPullRoundTrip() async throws {
        try await withRoutes { client in
            let reader = UUID()
            let token = try await register(client, reader: reader)
            let events = syntheticHistory(reader: reader, count: 5, seed: 11)
            let records = events.map { Data(BinaryEventCodec.encodeRecord($0)).base64EncodedString() }
            let push = try JSONEncoder().encode(PushRequest(events: records.map(PushRequest.Event.init(record:))))
            let first = try await client.execute(uri: "/v1/events", method: .post, headers: bearer(token), body: ByteBuffer(bytes: push))
            #expect(first.status == .ok)
            #expect(try decode(PushResult.self, first).stored == 5)
            let again = try decode(PushResult.self, try await client.execute(uri: "/v1/events", method: .post, headers: bearer(token),
                                                                              body: ByteBuffer(bytes: push)))
            #expect(again.stored == 0 && again.duplicates == 5, "a replayed batch stores nothing")
            let page = try decode(PullPage.self, try await client.execute(uri: "/v1/events", method: .get, headers: bearer(token)))
            #expect(page.events.map(\.record) == records)
            #expect(page.events.map(\.arrival) == [1, 2, 3, 4, 5])
            let next = try decode(PullPage.self, try await client.execute(uri: "/v1/events?after=\(page.next)", method: .get, headers: bearer(token)))
            #expect(next.events.isEmpty && !next.more)
            let anonymous = try await client.execute(uri: "/v1/events", method: .get)
            #expect(anonymous.status == .unauthorized)
            #expect(try decode(ErrorBody.self, anonymous).field == "Authorization")
        }
    }

    @Test func aRecordThatIsNotBase64Is400NamingTheField() async throws {
        try await withRoutes { client in
            let token = try await register(client, reader: UUID())
            let body = try JSONEncoder().encode(PushRequest(events: [.init(record: "not base64!")]))
            let reply = try await client.execute(uri: "/v1/events", method: .post, headers: bearer(token), body: ByteBuffer(bytes: body))
            #expect(reply.status == .badRequest)
            let error = try decode(ErrorBody.self, reply)
            #expect(error.error == "malformed_record" && error.field == "events[0].record")
        }
    }

    @Test func inviteGuessingIsLimited() async throws {
        var limits = ServerLimits()
        limits.inviteFailuresPerToken = 3
        try await withRoutes(limits: limits) { client in
            let token = try await register(client, reader: UUID())
            let guess = try JSONEncoder().encode(AcceptRequest(code: "WRONG"))
            for _ in 0..<3 {
                let reply = try await client.execute(uri: "/v1/invites/accept", method: .post, headers: bearer(token), body: ByteBuffer(bytes: guess))
                #expect(reply.status == .notFound)
            }
            let refused = try await client.execute(uri: "/v1/invites/accept", method: .post, headers: bearer(token), body: ByteBuffer(bytes: guess))
            #expect(refused.status == .tooManyRequests)
            #expect(try decode(ErrorBody.self, refused).error == "rate_limited")
            #expect(refused.headers[.retryAfter] != nil)
        }
    }

    /// Findings of schemathesis (seed 1): `pull` other than 1 was taken as absent, `limit` over
    /// 1000 on a push without `pull=1` was ignored; an invite without a body (optional in the
    /// contract) was 400.
    @Test func theContractsFindingsHold() async throws {
        try await withRoutes { client in
            let token = try await register(client, reader: UUID())
            let empty = try JSONEncoder().encode(PushRequest(events: []))
            let odd = try await client.execute(uri: "/v1/events?pull=AAA", method: .post, headers: bearer(token), body: ByteBuffer(bytes: empty))
            #expect(odd.status == .badRequest)
            #expect(try decode(ErrorBody.self, odd).field == "pull")
            let over = try await client.execute(uri: "/v1/events?limit=1001", method: .post, headers: bearer(token), body: ByteBuffer(bytes: empty))
            #expect(over.status == .badRequest, "limit is checked without pull=1 too")
            let invite = try await client.execute(uri: "/v1/invites", method: .post, headers: bearer(token))
            #expect(invite.status == .created, "\(String(buffer: invite.body))")
        }
    }

    @Test func theDeviceCapHolds() async throws {
        var limits = ServerLimits()
        limits.maxDevicesPerReader = 2
        try await withRoutes(limits: limits) { client in
            let token = try await register(client, reader: UUID())
            let another = try JSONEncoder().encode(RegisterRequest(reader: nil, name: "tablet"))
            let second = try await client.execute(uri: "/v1/devices", method: .post, headers: bearer(token), body: ByteBuffer(bytes: another))
            #expect(second.status == .created)
            let third = try await client.execute(uri: "/v1/devices", method: .post, headers: bearer(token), body: ByteBuffer(bytes: another))
            #expect(third.status == .conflict)
            #expect(try decode(ErrorBody.self, third).error == "device_limit")
        }
    }
}

/// Registers the first device of `reader`; returns its token.
private func register(_ client: any TestClientProtocol, reader: UUID) async throws -> String {
    let body = try JSONEncoder().encode(RegisterRequest(reader: reader, name: "phone"))
    let reply = try await client.execute(uri: "/v1/devices", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(bytes: body))
    #expect(reply.status == .created)
    return try decode(Registration.self, reply).token
}

private func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

private func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return try decoder.decode(type, from: Data(response.body.readableBytesView))
}
