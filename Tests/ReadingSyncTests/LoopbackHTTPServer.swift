import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for the client's tests: it answers each request with what
/// `handler` returns, one connection at a time, and closes every connection after its answer.
///
/// `@unchecked Sendable`: the listening socket is fixed after `init`, the accept loop runs on its
/// own thread, and `received` is only touched under `lock`.
final class LoopbackHTTPServer: @unchecked Sendable {
    /// One request as received.
    struct Request: Sendable {
        let method: String
        /// The path with its query.
        let target: String
        let body: [UInt8]
    }

    /// The port it listens on.
    let port: UInt16
    private let listener: Int32
    /// An answer: the status, extra header lines (`Retry-After: 1`) and the JSON body.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: String
    }

    private let handler: @Sendable (Request) -> Answer
    private let lock = NSLock()
    private var received: [Request] = []

    /// The base URL (`http://127.0.0.1:PORT`).
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The requests received so far.
    var requests: [Request] { lock.withLock { received } }

    /// The requests received so far other than `GET /v1/partners` (a sync's pull asks for the
    /// reader's partners once, to keep only their events).
    var pulls: [Request] { requests.filter { !$0.target.hasPrefix("/v1/partners") } }

    convenience init(handler: @escaping @Sendable (Request) -> (status: Int, body: String)) throws {
        try self.init(answering: { request in
            let (status, body) = handler(request)
            return Answer(status: status, body: body)
        })
    }

    /// A server whose answers may carry header lines.
    init(answering handler: @escaping @Sendable (Request) -> Answer) throws {
        self.handler = handler
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// Stops listening (the accept loop ends).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            serve(connection)
            close(connection)
        }
    }

    private func serve(_ connection: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func readMore() -> Bool {
            let n = chunk.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count >= 4 {
                headerEnd = (0...(buffer.count - 4)).first { buffer[$0..<($0 + 4)].elementsEqual(separator) }
            }
            if headerEnd == nil, !readMore() { return }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return }
        var contentLength = 0
        var expectsContinue = false
        for line in lines.dropFirst() {
            let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0].lowercased() == "content-length" { contentLength = Int(pair[1]) ?? 0 }
            if pair[0].lowercased() == "expect", pair[1].lowercased() == "100-continue" { expectsContinue = true }
        }
        if expectsContinue { write(connection, "HTTP/1.1 100 Continue\r\n\r\n") }
        let bodyStart = headerEnd! + 4
        while buffer.count < bodyStart + contentLength { if !readMore() { return } }
        let request = Request(method: String(parts[0]), target: String(parts[1]),
                              body: Array(buffer[bodyStart..<(bodyStart + contentLength)]))
        lock.withLock { received.append(request) }
        let answer = handler(request)
        let (status, body) = (answer.status, answer.body)
        let bytes = Array(body.utf8)
        let extra = answer.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\r\n" }.joined()
        write(connection, "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Refused")\r\nContent-Type: application/json\r\n" + extra
              + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n" + body)
    }

    private func write(_ connection: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)  // a client that hung up must not kill the test process
            #else
            let flags: Int32 = 0
            #endif
            let n = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, flags) }
            guard n > 0 else { return }
            sent += n
        }
    }
}
