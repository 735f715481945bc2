import Testing
@testable import RecordKeeperFeatures

@Suite struct LoadStateTests {
    @Test func `a failed refresh keeps the confirmed content beside the error`() {
        struct Offline: Error {}
        var state = LoadState<[Int]>.idle
        #expect(state.content == nil)
        state.startLoading()
        #expect(state.isLoading)
        state.finish(.success([1, 2]))
        #expect(state.content == [1, 2])
        #expect(state.error == nil)
        state.startLoading()
        #expect(state.content == [1, 2])
        state.finish(.failure(Offline()))
        #expect(state.content == [1, 2])
        #expect(state.error is Offline)
        #expect(!state.isLoading)
        state.finish(.success([]))
        #expect(state.content == [])
        #expect(state.error == nil)
    }

    @Test func `a failure before anything was loaded has no content, which is not an empty value`() {
        struct Offline: Error {}
        var state = LoadState<[Int]>.idle
        state.startLoading()
        state.finish(.failure(Offline()))
        #expect(state.content == nil)
        #expect(state.error is Offline)
    }
}
