// Package kgotxn holds what every franz-go transactional producer of this
// module does around EndTransaction to work around franz-go's behaviour.
//
// Terms:
//   - A topic is stored for producing once the client's metadata update
//     has put its partitions where the client looks them up; until then
//     the client does not count writes to it as part of the transaction.
//   - Written, in AwaitProduceMetadata, maps each topic a transaction
//     wrote to to one partition it wrote to.
package kgotxn
