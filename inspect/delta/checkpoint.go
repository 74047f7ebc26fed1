package delta

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// A Parquet checkpoint holds one action per row, in top-level columns
// named as the JSON actions (add, remove, metaData, protocol, txn); the
// reader reads only the fields it uses, by name.

type cpRow struct {
	Txn      *cpTxn      `parquet:"txn,optional"`
	Add      *cpAdd      `parquet:"add,optional"`
	Remove   *cpRemove   `parquet:"remove,optional"`
	MetaData *cpMetadata `parquet:"metaData,optional"`
	Protocol *cpProtocol `parquet:"protocol,optional"`
}

type cpTxn struct {
	AppID   string `parquet:"appId,optional"`
	Version int64  `parquet:"version,optional"`
}

type cpAdd struct {
	Path            string            `parquet:"path,optional"`
	PartitionValues map[string]string `parquet:"partitionValues,optional"`
	Size            int64             `parquet:"size,optional"`
	Stats           string            `parquet:"stats,optional"`
	DeletionVector  *cpDV             `parquet:"deletionVector,optional"`
}

type cpDV struct {
	StorageType    string `parquet:"storageType,optional"`
	PathOrInlineDv string `parquet:"pathOrInlineDv,optional"`
	Offset         *int32 `parquet:"offset,optional"`
	Cardinality    int64  `parquet:"cardinality,optional"`
}

func (dv *cpDV) descriptor() *DeletionVector {
	if dv == nil || dv.StorageType == "" {
		return nil
	}
	d := &DeletionVector{StorageType: dv.StorageType, PathOrInlineDv: dv.PathOrInlineDv, Cardinality: dv.Cardinality}
	if dv.Offset != nil {
		o := int64(*dv.Offset)
		d.Offset = &o
	}
	return d
}

type cpRemove struct {
	Path           string `parquet:"path,optional"`
	DeletionVector *cpDV  `parquet:"deletionVector,optional"`
}

type cpMetadata struct {
	ID               string            `parquet:"id,optional"`
	SchemaString     string            `parquet:"schemaString,optional"`
	PartitionColumns []string          `parquet:"partitionColumns,optional,list"`
	Configuration    map[string]string `parquet:"configuration,optional"`
}

type cpProtocol struct {
	MinReaderVersion int32    `parquet:"minReaderVersion,optional"`
	MinWriterVersion int32    `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
	WriterFeatures   []string `parquet:"writerFeatures,optional,list"`
}

// readCheckpoint reads the actions of one checkpoint file (or part). A
// checkpoint holds the table's state: one row per live file, plus the
// metadata, protocol and each app id's latest txn. Rows are read in
// batches of 256, so a checkpoint of many files is not held twice.
func (t *table) readCheckpoint(name string) (out []Action, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, t.errf(name, "damaged Parquet checkpoint: %v", p)
		}
	}()
	f, err := t.root.Open(name)
	if err != nil {
		return nil, t.errf(name, "%v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, t.errf(name, "%v", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, t.errf(name, "not a Parquet checkpoint: %v", err)
	}
	r := parquet.NewGenericReader[cpRow](pf)
	defer r.Close()
	buf := make([]cpRow, 256)
	for {
		n, err := readRows(r, buf)
		for i := range buf[:n] {
			a, aerr := buf[i].action()
			if aerr == nil {
				aerr = checkAction(&a)
			}
			if aerr != nil {
				return nil, t.errf(name, "row %d: %v", len(out)+1, aerr)
			}
			out = append(out, a)
			buf[i] = cpRow{}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, t.errf(name, "%v", err)
		}
	}
}

// readRows reads rows, turning a panic of the Parquet reader on a damaged
// file into an error.
func readRows(r *parquet.GenericReader[cpRow], buf []cpRow) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("damaged Parquet file: %v", p)
		}
	}()
	return r.Read(buf)
}

func (c *cpRow) action() (Action, error) {
	var a Action
	set := 0
	if c.Txn != nil {
		a.Txn = &Txn{AppID: c.Txn.AppID, Version: c.Txn.Version}
		set++
	}
	if c.Add != nil {
		add := &AddFile{Path: c.Add.Path, Size: c.Add.Size, Stats: c.Add.Stats}
		if len(c.Add.PartitionValues) > 0 {
			add.PartitionValues = map[string]*string{}
			for k, v := range c.Add.PartitionValues {
				add.PartitionValues[k] = &v
			}
		}
		add.DeletionVector = c.Add.DeletionVector.descriptor()
		a.Add = add
		set++
	}
	if c.Remove != nil {
		a.Remove = &RemoveFile{Path: c.Remove.Path, DeletionVector: c.Remove.DeletionVector.descriptor()}
		set++
	}
	if c.MetaData != nil {
		a.MetaData = &Metadata{ID: c.MetaData.ID, SchemaString: c.MetaData.SchemaString,
			PartitionColumns: c.MetaData.PartitionColumns, Configuration: c.MetaData.Configuration}
		set++
	}
	if c.Protocol != nil {
		a.Protocol = &Protocol{MinReaderVersion: int(c.Protocol.MinReaderVersion), MinWriterVersion: int(c.Protocol.MinWriterVersion),
			ReaderFeatures: c.Protocol.ReaderFeatures, WriterFeatures: c.Protocol.WriterFeatures}
		set++
	}
	if set > 1 {
		return a, errors.New("more than one action in one checkpoint row")
	}
	return a, nil
}
