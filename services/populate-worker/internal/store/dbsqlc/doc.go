// Package dbsqlc holds the statements of ../query.sql compiled by sqlc (make generate); every
// other file here is generated. Each method takes the DBTX to run on, so the caller chooses the
// transaction.
package dbsqlc
