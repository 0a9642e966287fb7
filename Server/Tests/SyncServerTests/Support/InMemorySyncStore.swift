import Foundation
import NIOCore
import ReadingEvents
import SyncServerCore
import SyncWire

/// ``SyncStore`` in memory, for the route tests (no PostgreSQL): the same answers and refusals as
/// ``PostgresSyncStore`` for what those tests do (devices, tokens, pushes with duplicates and the
/// refusals of another reader's ID or another fact, pulls of one's own and partners' shared
/// events, invites, share settings). One process, no notices.
///
/// `Sendable`: an actor.
actor InMemorySyncStore: SyncStore {
    nonisolated let tokens = TokenCache()

    private struct Device { let id: UUID; let name: String; let hash: [UInt8]; let created: Date; var revoked: Date? }
    private struct Stored { let arrival: Int64; let event: IncomingEvent }
    private struct InviteRow { let reader: UUID; let expires: Date; var usedBy: UUID? }
    private var devicesByReader: [UUID: [Device]] = [:]
    private var logs: [UUID: [Stored]] = [:]
    private var invites: [[UInt8]: InviteRow] = [:]
    private var partnerships: [UUID: [UUID: Date]] = [:]
    private var replicaOwners: [UUID: UUID] = [:]
    private var settings: [UUID: ShareSettings] = [:]

    func ping() async throws {}

    func registerFirstDevice(reader: UUID, name: String) async throws -> Registration {
        guard devicesByReader[reader] == nil else {
            throw APIError(.conflict, "reader_exists", field: "reader", "this reader is registered")
        }
        return insertDevice(reader: reader, name: name)
    }

    func registerDevice(for device: SyncDevice, name: String, limit: Int) async throws -> Registration {
        guard (devicesByReader[device.reader] ?? []).filter({ $0.revoked == nil }).count < limit else {
            throw APIError(.conflict, "device_limit", field: "name", "a reader has at most \(limit) devices that are not revoked")
        }
        return insertDevice(reader: device.reader, name: name)
    }

    private func insertDevice(reader: UUID, name: String) -> Registration {
        let id = UUID()
        let (token, hash) = Tokens.newDeviceToken(reader: reader)
        devicesByReader[reader, default: []].append(Device(id: id, name: name, hash: hash, created: Date(), revoked: nil))
        return Registration(reader: reader.uuidString.lowercased(), device: id.uuidString.lowercased(), token: token)
    }

    func authenticate(token: String) async throws -> SyncDevice? {
        guard let (reader, hash) = Tokens.parse(token),
              let device = devicesByReader[reader]?.first(where: { $0.hash == hash && $0.revoked == nil }) else { return nil }
        return SyncDevice(reader: reader, device: device.id)
    }

    func devices(of reader: UUID) async throws -> [DeviceInfo] {
        (devicesByReader[reader] ?? []).map {
            DeviceInfo(device: $0.id.uuidString.lowercased(), name: $0.name, createdAt: $0.created, revokedAt: $0.revoked)
        }
    }

    func revoke(device: UUID, of reader: UUID) async throws -> Bool {
        guard let index = devicesByReader[reader]?.firstIndex(where: { $0.id == device }) else { return false }
        if devicesByReader[reader]![index].revoked == nil { devicesByReader[reader]![index].revoked = Date() }
        tokens.remove(device: device)
        return true
    }

    func push(reader: UUID, events: [IncomingEvent]) async throws -> PushResult {
        var log = logs[reader] ?? []
        var stored = 0
        for event in events {
            if logs.contains(where: { $0.key != reader && $0.value.contains { $0.event.eventID == event.eventID } }) {
                throw APIError(.conflict, "event_id_taken", field: "events[\(event.index)].record.eventID",
                               "event ID \(event.eventID.uuidString.lowercased()) belongs to another reader")
            }
            let copies = log.filter { $0.event.eventID == event.eventID }
            if copies.contains(where: { $0.event.replica == event.replica && $0.event.sequence == event.sequence }) { continue }
            if copies.contains(where: { $0.event.fact != event.fact }) { throw APIError.otherFact(event) }
            // A replica belongs to the reader whose push first used it (as PostgresSyncStore's
            // `replica_owners`).
            if let replica = event.replica, let owner = replicaOwners[replica], owner != reader { throw APIError.originTaken(event) }
            if log.contains(where: { $0.event.replica == event.replica && $0.event.sequence == event.sequence && $0.event.eventID != event.eventID }) {
                throw APIError.originTaken(event)
            }
            log.append(Stored(arrival: Int64(log.count + 1), event: event))
            stored += 1
        }
        logs[reader] = log
        for event in events { if let replica = event.replica, replicaOwners[replica] == nil { replicaOwners[replica] = reader } }
        return PushResult(stored: stored, duplicates: events.count - stored, lastArrival: Int64(log.count))
    }

    func sources(of reader: UUID) async throws -> [(reader: UUID, groups: [String]?)] {
        [(reader, nil)] + (partnerships[reader] ?? [:]).keys.sorted { $0.uuidString < $1.uuidString }.map { partner in
            (partner, (settings[partner] ?? ShareSettings()).groups.map(\.rawValue))
        }
    }

    func pull(reader: UUID, after cursor: PullCursor, limit: Int) async throws -> PullPage {
        var cursor = cursor
        var page: [PulledEvent] = []
        var more = false
        let sources = try await sources(of: reader)
        cursor.keep(only: Set(sources.map(\.reader)))
        for (source, groups) in sources {
            var share: PullCursor.Share?
            if let groups { share = cursor.rescoped(source, to: Set(groups)) }
            let after = cursor.positions[source] ?? 0
            for stored in logs[source] ?? [] where stored.arrival > after {
                let group = stored.event.group.rawValue
                if let share {
                    guard share.groups.contains(group) else { continue }
                    if stored.arrival <= share.skipThrough && share.skipGroups.contains(group) { continue }
                }
                if page.count == limit { more = true; break }
                page.append(PulledEvent(reader: source.uuidString.lowercased(), arrival: stored.arrival,
                                        eventID: stored.event.eventID.uuidString.lowercased(),
                                        record: Data(stored.event.record.readableBytesView).base64EncodedString()))
                cursor.positions[source] = stored.arrival
            }
            if more { break }
        }
        return PullPage(events: page, next: cursor.encoded, more: more)
    }

    func createInvite(reader: UUID, seconds: Int, liveLimit: Int) async throws -> Invite {
        let live = invites.values.filter { $0.reader == reader && $0.usedBy == nil && $0.expires > Date() }.count
        if live >= liveLimit { throw APIError.inviteLimit(liveLimit) }
        let (code, hash) = Tokens.newInviteCode()
        let expires = Date().addingTimeInterval(TimeInterval(seconds))
        invites[hash] = InviteRow(reader: reader, expires: expires)
        return Invite(code: code, expiresAt: expires.formatted(.iso8601))
    }

    func acceptInvite(code: String, reader: UUID, partnerLimit: Int) async throws -> UUID {
        let hash = Tokens.inviteHash(code)
        guard let invite = invites[hash] else { throw APIError(.notFound, "invite_not_found", field: "code", "no invite has this code") }
        if invite.usedBy != nil { throw APIError(.gone, "invite_used", field: "code", "this invite was already accepted") }
        if invite.expires <= Date() { throw APIError(.gone, "invite_expired", field: "code", "this invite has expired") }
        if invite.reader == reader { throw APIError(.badRequest, "own_invite", field: "code", "a reader cannot accept its own invite") }
        if partnerships[invite.reader]?[reader] == nil {
            if (partnerships[reader]?.count ?? 0) >= partnerLimit { throw APIError.partnerLimit(partnerLimit, acceptor: true) }
            if (partnerships[invite.reader]?.count ?? 0) >= partnerLimit { throw APIError.partnerLimit(partnerLimit, acceptor: false) }
        }
        invites[hash]!.usedBy = reader
        let now = Date()
        if partnerships[invite.reader]?[reader] == nil {
            partnerships[invite.reader, default: [:]][reader] = now
            partnerships[reader, default: [:]][invite.reader] = now
        }
        return invite.reader
    }

    func partners(of reader: UUID) async throws -> [Partner] {
        (partnerships[reader] ?? [:]).sorted { $0.value < $1.value }.map { Partner(reader: $0.key.uuidString.lowercased(), since: $0.value) }
    }

    func endPartnership(reader: UUID, partner: UUID) async throws -> Bool {
        guard partnerships[reader]?[partner] != nil else { return false }
        partnerships[reader]?[partner] = nil
        partnerships[partner]?[reader] = nil
        return true
    }

    func shareSettings(of reader: UUID) async throws -> ShareSettings { settings[reader] ?? ShareSettings() }

    func setShareSettings(_ settings: ShareSettings, of reader: UUID) async throws { self.settings[reader] = settings }
}
