import Foundation

extension HTTPSyncServer {
    /// The push bodies of a list of operations, each operation encoded once: its bytes both
    /// size the batches that fit the relay's body limit and make the bodies, which are
    /// byte for byte ``/RecordKeeperCoding/RecordJSONEncoder``'s encoding of a ``/RecordKeeperSync/RelayWire/PushRequest`` of the batch.
    struct PushBody {
        /// `{"operations":[`: the envelope before the operations (keys sorted: `operations`
        /// comes before `space`).
        let head: Data
        /// `],"space":"…"}`.
        let tail: Data
        /// Each operation's JSON, in order.
        let encodedOperations: [Data]
        let operations: [SyncOperation]

        init(space: String, operations: [SyncOperation]) throws {
            let envelope = try HTTPSyncServer.encoded(RelayWire.PushRequest(space: space, operations: []))
            // The envelope is `{"operations":[],"space":"…"}`: split it inside the `[]`.
            guard let open = envelope.firstIndex(of: UInt8(ascii: "[")),
                envelope.index(after: open) < envelope.endIndex,
                envelope[envelope.index(after: open)] == UInt8(ascii: "]")
            else {
                throw SyncError(.invalidRequest, "the push envelope could not be encoded")
            }
            head = envelope[envelope.startIndex...open]
            tail = envelope[envelope.index(after: open)...]
            let encoder = RecordJSONEncoder()
            encodedOperations = try operations.map { operation in
                do {
                    return try SyncWireJSON.encode(operation, encoder: encoder)
                } catch {
                    throw SyncError(.invalidRequest, "the push could not be encoded: \(error)", underlying: error)
                }
            }
            self.operations = operations
        }

        /// The size in bytes of the body of `range`.
        func size(of range: Range<Int>) -> Int {
            head.count + tail.count + encodedOperations[range].reduce(0) { $0 + $1.count } + max(0, range.count - 1)
        }

        /// The end of the longest run of whole operations from `start` whose body fits in
        /// `limit` bytes.
        ///
        /// - Throws: ``/RecordKeeperSync/SyncError/Code/invalidRequest`` when the operation at `start` alone does
        ///   not fit (its changes apply together, so it cannot be split).
        func batchEnd(from start: Int, limit: Int, relay: URL) throws -> Int {
            var size = head.count + tail.count
            var end = start
            while end < encodedOperations.endIndex {
                let added = encodedOperations[end].count + (end == start ? 0 : 1)
                if size + added > limit { break }
                size += added
                end += 1
            }
            guard end > start else {
                throw SyncError(
                    .invalidRequest,
                    "operation \(operations[start].id) is \(self.size(of: start..<start + 1)) bytes as a push, and the "
                        + "relay at \(relay.shownWithoutPassword) accepts at most \(limit): its changes apply together, so it "
                        + "cannot be split; nothing of it was sent. It and every later operation stay pending (changing "
                        + "or removing the record adds an operation after it, and pulls wait for pushes) until the "
                        + "relay accepts larger bodies: its operator can raise `recordkeeper-relay serve --max-body` "
                        + "above \(self.size(of: start..<start + 1))")
            }
            return end
        }

        /// The body of the operations in `range`.
        func request(_ range: Range<Int>) -> Data {
            var body = Data(capacity: size(of: range))
            body.append(head)
            for index in range {
                if index != range.lowerBound { body.append(UInt8(ascii: ",")) }
                body.append(encodedOperations[index])
            }
            body.append(tail)
            return body
        }
    }
}
