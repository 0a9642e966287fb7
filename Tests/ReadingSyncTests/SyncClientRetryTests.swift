import EventStoreLMDB
import Foundation
import ReadingEvents
import Testing
import TestSupport
@testable import ReadingSync

/// Waits a client asked for, recorded instead of slept (``RetryPolicy/sleep``).
///
/// `@unchecked Sendable`: `list` is only touched under `lock`.
final class RecordedWaits: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Duration] = []
    var waits: [Duration] { lock.withLock { list } }
    var total: Duration { waits.reduce(.zero, +) }
    func add(_ wait: Duration) { lock.withLock { list.append(wait) } }
}

/// Issue 39, finding 8: the client honours `Retry-After` and waits out an outage of a few
/// minutes (5 by default, ``RetryPolicy/maxOutage``). Before, it made 6 attempts 0.1 … 1.6 s
/// apart (about 3 s, 15 s at most with 30 s timeouts) and ignored `Retry-After`.
@Suite(.serialized) struct SyncClientRetryTests {
    static func token(_ reader: ReaderID) -> String { "\(reader.uuid.uuidString).secret" }

    /// The outage limit of the tests that check something else than the limit.
    static let longOutage = Duration.seconds(3600)

    /// The answers of a server with nothing to pull (and no partners).
    static func emptyServer(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Answer {
        if request.target.hasPrefix("/v1/partners") { return .init(status: 200, body: #"{"partners":[]}"#) }
        return .init(status: 200, body: #"{"events":[],"next":"c1","more":false}"#)
    }

    /// A server that answers 503 with `Retry-After: 1` three times: the client waits at least a
    /// second before each next attempt (real time, the default sleep), then succeeds. Before:
    /// the retries came 0.1, 0.2 and 0.4 s apart.
    @Test func a503WithRetryAfterIsWaitedFor() async throws {
        let dir = try TempDirectory.created(prefix: "sync-retry-after")
        defer { dir.remove() }
        let reader = ReaderID()
        let store = try ReadingStore.open(at: dir.child("phone"))
        let times = RecordedWaits()
        let started = ContinuousClock.now
        let server = try LoopbackHTTPServer(answering: { request in
            times.add(ContinuousClock.now - started)
            if times.waits.count <= 3 {
                return .init(status: 503, headers: ["Retry-After": "1"],
                             body: #"{"error":"unavailable","message":"the database is unavailable; retry the request"}"#)
            }
            return Self.emptyServer(request)
        })
        defer { server.stop() }
        // The outage limit is not what this test checks: an hour, since in a test process whose
        // threads other tests keep busy, one answered attempt once took 443 s to come back (and
        // the time attempts take counts toward the outage).
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader),
                                    retry: RetryPolicy(maxOutage: Self.longOutage))
        let report = try await client.sync()
        #expect(report.pulled.appended == 0)
        let at = times.waits
        #expect(at.count >= 4, "\(at)")
        for index in 1..<min(at.count, 4) {
            #expect(at[index] - at[index - 1] >= .milliseconds(950), "attempt \(index + 1) came \(at[index] - at[index - 1]) after the one before")
        }
    }

    /// An outage longer than the old limit (503 without `Retry-After`, then no server at all)
    /// is waited out with growing waits, up to 10 s apart, and the sync then succeeds. The waits
    /// are recorded, not slept (the policy's `sleep`), so the test takes no minutes.
    @Test func anOutageOfAMinuteIsWaitedOutWithGrowingWaits() async throws {
        let dir = try TempDirectory.created(prefix: "sync-outage")
        defer { dir.remove() }
        let reader = ReaderID()
        let store = try ReadingStore.open(at: dir.child("phone"))
        let waits = RecordedWaits()
        let server = try LoopbackHTTPServer(answering: { request in
            if waits.total < .seconds(60) { return .init(status: 503, body: #"{"error":"unavailable","message":"down"}"#) }
            return Self.emptyServer(request)
        })
        defer { server.stop() }
        // The default limit is 5 minutes; the test's own is an hour, so that attempts slowed by
        // other tests (their time counts toward the outage) do not end it early.
        #expect(RetryPolicy.standard.maxOutage == .seconds(300))
        let policy = RetryPolicy(maxOutage: Self.longOutage, sleep: { waits.add($0) })
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), retry: policy)
        _ = try await client.sync()
        #expect(waits.total >= .seconds(60), "\(waits.waits)")
        #expect(waits.waits.allSatisfy { $0 <= .seconds(10) }, "\(waits.waits)")
        #expect(waits.waits.first! < .milliseconds(101) && waits.waits.contains { $0 > .seconds(4) }, "\(waits.waits)")
    }

    /// A `Retry-After` past ``RetryPolicy/maxRetryAfter`` (an hour) waits that cap and asks
    /// again; an HTTP date is followed too.
    @Test func aLongRetryAfterIsCappedAndADateIsFollowed() async throws {
        let dir = try TempDirectory.created(prefix: "sync-retry-cap")
        defer { dir.remove() }
        let reader = ReaderID()
        let store = try ReadingStore.open(at: dir.child("phone"))
        let waits = RecordedWaits()
        let count = FakeServerState()
        // The date the server names, and when the client went to sleep: the wait is the time
        // between them (the date has whole seconds), however long the answer took to arrive.
        let target = DateBox(), sleptAt = DateBox()
        let server = try LoopbackHTTPServer(answering: { request in
            count.add([EventID()])
            switch count.stored.count {
            case 1: return .init(status: 429, headers: ["Retry-After": "3600"], body: #"{"error":"rate_limited","message":"slow down"}"#)
            case 2:
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "GMT")
                formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
                let date = Date().addingTimeInterval(20)
                target.set(date)
                return .init(status: 503, headers: ["Retry-After": formatter.string(from: date)],
                             body: #"{"error":"unavailable","message":"down"}"#)
            default: return Self.emptyServer(request)
            }
        })
        defer { server.stop() }
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), retry: RetryPolicy(maxOutage: Self.longOutage, sleep: { waits.add($0); sleptAt.set(Date()) }))
        _ = try await client.sync()
        #expect(waits.waits.count == 2, "\(waits.waits)")
        #expect(waits.waits.first == .seconds(60), "\(waits.waits)")
        let named = try #require(target.value).timeIntervalSince(try #require(sleptAt.value))
        let last = try #require(waits.waits.last)
        let seconds = Double(last.components.seconds) + Double(last.components.attoseconds) / 1e18
        // A date already past when the answer is read (a stalled test process) is the shortest wait.
        let expected = max(named, 0.1)
        #expect(seconds > 0 && seconds <= 20 && abs(seconds - expected) < 1.5, "waited \(last), the date was \(named) s ahead")
    }

    /// `Retry-After` values: delay-seconds and the three HTTP date forms; anything else is none.
    @Test func retryAfterValuesParse() {
        let now = Date(timeIntervalSince1970: 1_792_567_620)  // Wed, 21 Oct 2026 07:27:00 GMT
        #expect(RetryPolicy.retryAfter("120", now: now) == .seconds(120))
        #expect(RetryPolicy.retryAfter(" 0 ", now: now) == .zero)
        #expect(RetryPolicy.retryAfter("99999999999999999999", now: now) == .seconds(86_400))
        #expect(RetryPolicy.retryAfter("Wed, 21 Oct 2026 07:28:00 GMT", now: now) == .seconds(60))
        #expect(RetryPolicy.retryAfter("Wednesday, 21-Oct-26 07:28:00 GMT", now: now) == .seconds(60))
        #expect(RetryPolicy.retryAfter("Wed Oct 21 07:28:00 2026", now: now) == .seconds(60))
        #expect(RetryPolicy.retryAfter("Wed, 21 Oct 2026 07:00:00 GMT", now: now) == .zero)
        for bad in ["", "-1", "1.5", "soon", "Wed, 32 Oct 2026 07:28:00 GMT"] {
            #expect(RetryPolicy.retryAfter(bad, now: now) == nil, "\(bad)")
        }
    }

    /// No server at all, past ``RetryPolicy/maxOutage`` (2 s here, slept for real): one error,
    /// status 0, naming the cause and the place and saying how long the client tried.
    @Test func anOutageLongerThanMaxOutageEndsInOneLineNamingTheCause() async throws {
        let dir = try TempDirectory.created(prefix: "sync-gone")
        defer { dir.remove() }
        let reader = ReaderID()
        let store = try ReadingStore.open(at: dir.child("phone"))
        let client = try SyncClient(store: store, server: URL(string: "http://127.0.0.1:1")!, token: Self.token(reader),
                                    retry: RetryPolicy(maxOutage: .seconds(2)))
        let started = ContinuousClock.now
        let error = await #expect(throws: SyncError.self) { try await client.sync() }
        let took = ContinuousClock.now - started
        #expect(error?.status == 0 && error?.code == "transport", "\(String(describing: error))")
        #expect(error?.message.contains("connection refused at 127.0.0.1:1") == true, "\(String(describing: error))")
        #expect(error?.message.contains("gave up after") == true, "\(String(describing: error))")
        #expect(error.map { !"\($0)".contains("\n") } == true)
        // Well under the 5-minute default: a client that ignored `maxOutage` would still be trying.
        // Not tighter: in a full parallel test run a sleep or a refused connection can be late by
        // seconds (a run on this machine took over 10 s here).
        #expect(took >= .milliseconds(1900) && took < .seconds(60), "\(took)")
    }
}

/// A date set from another thread (the loopback server's, the client's sleep).
///
/// `@unchecked Sendable`: `value` is only touched under `lock`.
final class DateBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Date?
    var value: Date? { lock.withLock { stored } }
    func set(_ date: Date) { lock.withLock { stored = date } }
}
