import Foundation

/// The encoder and decoder of one ``/RecordKeeperCoding/RecordCoding/Implementation``, for a repository or a bulk
/// operation: one instance reuses its buffers for every record. Not thread-safe.
struct PayloadCoder {
    private let fastEncoder: RecordJSONEncoder?
    private let fastDecoder: RecordJSONDecoder?
    private let foundationEncoder: JSONEncoder?
    private let foundationDecoder: JSONDecoder?

    init(_ engine: RecordCoding.Implementation, strategies: RecordCoding.Strategies = .default) {
        switch engine {
        case .recordJSON:
            fastEncoder = RecordJSONEncoder(strategies: strategies)
            fastDecoder = RecordJSONDecoder(strategies: strategies)
            foundationEncoder = nil
            foundationDecoder = nil
        case .foundation:
            fastEncoder = nil
            fastDecoder = nil
            foundationEncoder = RecordCoding.makeEncoder(strategies)
            foundationDecoder = RecordCoding.makeDecoder(strategies)
        }
    }

    func encode<T: Encodable>(_ value: T) throws -> Data {
        if let fastEncoder { return try fastEncoder.encode(value) }
        return try foundationEncoder!.encode(value)
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let fastDecoder { return try fastDecoder.decode(type, from: data) }
        return try foundationDecoder!.decode(type, from: data)
    }

    /// `decode(_:from:)` of borrowed bytes, copied only for Foundation's decoder.
    func decode<T: Decodable>(_ type: T.Type, fromBytes bytes: UnsafeRawBufferPointer) throws -> T {
        if let fastDecoder { return try fastDecoder.decode(type, fromBytes: bytes) }
        return try foundationDecoder!.decode(type, from: Data(bytes))
    }
}
